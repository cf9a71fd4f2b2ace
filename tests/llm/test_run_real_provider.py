"""A whole run through litellm's real OpenAI path (against a local fake server): keys stay out of history."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from contracts import WORKFLOW_TYPE, AgentConfig, ModelSettings, RunInput, RunResult, Trace
from conversation import ContextPolicy
from tests.fake_openai import FakeOpenAI, chat_completion, tool_call

SENTINEL_KEY = "sk-sentinel-0f9e8d7c6b5a-never-in-history"


async def calculator_run(
    client: Client, task_queue: str, server: FakeOpenAI, expression: str, answer: str, **config: Any
) -> WorkflowHandle[Any, RunResult]:
    """A run of `openai/gpt-4o-mini` against the fake server: one calculator call, then `answer`."""
    arguments = json.dumps({"expression": expression})
    server.reply(chat_completion(tool_calls=[tool_call("calculator", arguments, "call_1")]))
    server.reply(chat_completion(answer))
    run = RunInput(
        query=f"What is {expression}?",
        config=AgentConfig(
            model="openai/gpt-4o-mini",
            tools=["calculator"],
            model_settings=ModelSettings(extra={"api_base": server.base_url}),
            **config,
        ),
    )
    return await client.start_workflow(
        WORKFLOW_TYPE,
        run,
        id=f"test-provider-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        result_type=RunResult,
    )


async def test_api_key_is_used_by_the_activity_but_never_in_history(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    async with FakeOpenAI() as server:
        handle = await calculator_run(client, task_queue, server, "6 * 7", "6 * 7 = 42")
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.status == "completed" and result.result == "6 * 7 = 42"
    # The key reached the provider from the worker's environment...
    assert [r.headers.get("Authorization") for r in server.requests] == [f"Bearer {SENTINEL_KEY}"] * 2
    # ...and the second call carried the tool result, in OpenAI format.
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert json.loads(tool_message["content"]) == {"ok": True, "result": 42}
    # ...but it appears nowhere in the workflow's history (inputs, results, failures, details).
    assert SENTINEL_KEY not in history.to_json()
    assert "sk-sentinel" not in history.to_json()


async def test_exact_token_estimator_counts_each_message_once(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    async with FakeOpenAI() as server:
        policy = ContextPolicy(token_estimator="exact")
        handle = await calculator_run(client, task_queue, server, "2 + 2", "4", context_policy=policy)
        result = await handle.result()
    assert result.result == "4"
    history = await handle.fetch_history()
    counted = [
        len(json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)["messages"])
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "count_tokens"
    ]
    assert counted == [1, 2]  # the query first; then only the assistant call and the tool result
    trace = await handle.query("trace", result_type=Trace)
    started = [e.data for e in trace.events if e.kind == "llm_started"]
    assert all(isinstance(d["estimated_tokens"], int) and d["truncated"] is False for d in started)
