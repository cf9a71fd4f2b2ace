"""ReActRun end to end: answers, tool rounds, limits and bad input (real server, real worker)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from contracts import MAX_ITERATIONS_RESULT
from conversation import MessageEntry
from tests.helpers import call, context_of, messages, start_run, trace_of, turn


def tool_results(result_thread: list[Any]) -> list[dict[str, Any]]:
    return [
        json.loads(e.payload.content)
        for e in result_thread
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    ]


async def test_final_answer(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("42")], system_prompt="Be brief.")
    result = await handle.result()
    assert result.status == "completed"
    assert result.outcome.termination_reason == "final_answer"
    assert result.result == "42"
    assert result.outcome.iterations == 1
    assert messages(result.entries) == [("user", "What is 6 * 7?"), ("assistant", "42")]
    assert [e.seq for e in result.entries] == [0, 1]
    assert (await context_of(handle)).system_prompt == "Be brief."
    assert [m.content for m in (await context_of(handle)).messages] == ["What is 6 * 7?", "42"]
    assert result.outcome.usage.llm_calls == 1 and result.outcome.usage.total_tokens > 0
    kinds = [e.kind for e in (await trace_of(handle)).events]
    assert kinds == ["request_started", "llm_started", "llm_completed", "request_completed"]


async def test_tool_round_with_calculator(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]), turn("It is 42.")]
    handle = await start_run(client, task_queue, script, tools=["calculator"])
    result = await handle.result()
    assert result.result == "It is 42."
    roles = [e.payload.role for e in result.entries if isinstance(e, MessageEntry)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert tool_results(result.entries) == [{"ok": True, "result": 42}]
    assistant = (await context_of(handle)).messages[1]
    assert assistant.tool_calls is not None and assistant.tool_calls[0].name == "calculator"
    assert (await context_of(handle)).messages[2].tool_call_id == assistant.tool_calls[0].id
    # The Web UI shows each activity by a readable summary.
    history = await handle.fetch_history()
    summaries = [
        json.loads(e.user_metadata.summary.data)
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert summaries == [
        "llm scripted #1",
        f"tool calculator {assistant.tool_calls[0].id}",
        "llm scripted #2",
    ]


async def test_parallel_tool_calls_keep_call_order(client: Client, task_queue: str) -> None:
    calls = [
        call("slow", {"seconds": 1.0, "label": "first"}),
        call("slow", {"seconds": 0.1, "label": "second"}),
        call("echo", {"text": "third"}),
    ]
    handle = await start_run(
        client, task_queue, [turn(tool_calls=calls), turn("done")], tools=["slow", "echo"]
    )
    result = await handle.result()
    assert [r["result"] for r in tool_results(result.entries)] == [
        "slept 1.0s first",
        "slept 0.1s second",
        "third",
    ]
    trace = await trace_of(handle)
    completed = [e.data["name"] for e in trace.events if e.kind == "tool_completed"]
    started = [e for e in trace.events if e.kind == "tool_started"]
    # They ran concurrently: all three started before the slow first one completed.
    first_done = next(
        e.seq for e in trace.events if e.kind == "tool_completed" and e.call_id == started[0].call_id
    )
    assert all(e.seq < first_done for e in started)
    assert completed[-1] == "slow"


async def test_max_iterations(client: Client, task_queue: str) -> None:
    looping = [turn(tool_calls=[call("echo", {"text": f"step {i}"})]) for i in range(5)]
    handle = await start_run(client, task_queue, looping, tools=["echo"], max_iterations=3)
    result = await handle.result()
    assert result.status == "completed"
    assert result.outcome.termination_reason == "max_iterations"
    assert result.result == MAX_ITERATIONS_RESULT
    assert result.outcome.iterations == 3
    # Every tool call of the last round was answered: no dangling call.
    assert len(tool_results(result.entries)) == 3


async def test_repeated_tool_round_gets_a_persisted_nudge(client: Client, task_queue: str) -> None:
    same = call("echo", {"text": "again"})
    handle = await start_run(
        client, task_queue, [turn(tool_calls=[same]), turn(tool_calls=[same]), turn("ok")], tools=["echo"]
    )
    result = await handle.result()
    roles = [(role, content[:20]) for role, content in messages(result.entries)]
    assert [role for role, _ in roles] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    nudge = [
        e for e in result.entries if isinstance(e, MessageEntry) and e.refs.get("source") == "repeat_nudge"
    ]
    assert len(nudge) == 1 and "repeat" in nudge[0].payload.content
    assert any("repeat" in m.content for m in (await context_of(handle)).messages if m.role == "user")


async def test_tool_failing_once_then_succeeding(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("flaky", {"key": "basics-flaky"})]), turn("fine")]
    handle = await start_run(client, task_queue, script, tools=["flaky"], tool_max_retries=1)
    result = await handle.result()
    assert tool_results(result.entries) == [{"ok": True, "result": "ok basics-flaky"}]


async def test_tool_timeout_becomes_an_error_result(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("slow", {"seconds": 5})]), turn("gave up")]
    handle = await start_run(
        client,
        task_queue,
        script,
        tools=["slow"],
        tool_timeout_s=0.5,
        tool_max_retries=1,
        tool_retry_backoff_s=0.1,
    )
    result = await handle.result()
    assert result.status == "completed"
    (outcome,) = tool_results(result.entries)
    assert outcome["ok"] is False and outcome["error"]["type"] == "timeout"


async def test_unknown_tool_and_malformed_arguments_are_error_results(
    client: Client, task_queue: str
) -> None:
    calls = [
        call("nonexistent", {}),
        call("calculator", '{"expression": "1 +'),
        call("calculator", {"expr": "1"}),
    ]
    handle = await start_run(
        client, task_queue, [turn(tool_calls=calls), turn("sorry")], tools=["calculator"]
    )
    result = await handle.result()
    unknown, malformed, invalid = tool_results(result.entries)
    assert unknown["error"]["type"] == "unknown_tool" and "nonexistent" in unknown["error"]["message"]
    assert malformed["error"]["type"] == "invalid_arguments" and "JSON" in malformed["error"]["message"]
    assert invalid["error"]["type"] == "invalid_arguments" and "expression" in invalid["error"]["message"]
    # The raw malformed arguments are kept verbatim in the thread.
    assistant = next(e for e in result.entries if isinstance(e, MessageEntry) and e.payload.tool_calls)
    assert assistant.payload.tool_calls is not None
    assert assistant.payload.tool_calls[1].arguments == '{"expression": "1 +'


async def test_oversized_tool_output_is_truncated(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("huge", {"size": 3_000_000})]), turn("ok")]
    handle = await start_run(client, task_queue, script, tools=["huge"])
    result = await handle.result()
    (outcome,) = tool_results(result.entries)
    assert outcome["ok"] is True
    assert "truncated" in str(outcome["result"]) and len(str(outcome["result"])) < 100_000


async def test_empty_answer_that_was_cut_off_fails_the_run(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("", finish_reason="length")])
    result = await handle.result()
    assert result.status == "failed" and result.outcome.termination_reason == "error"
    assert result.outcome.error is not None and result.outcome.error.type == "incomplete_response"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"query": "   "}, "query must not be blank"),
        ({"model_settings": {"extra": {"api_key": "sk-x"}}}, "credentials"),
        ({"tools": ["calculator", "calculator"]}, "more than once"),
    ],
)
async def test_bad_input_fails_fast_before_any_llm_call(
    client: Client, task_queue: str, overrides: dict[str, Any], expected: str
) -> None:
    query = overrides.pop("query", "hello")
    handle = await start_run(client, task_queue, [turn("never")], query=query, **overrides)
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "invalid_input" and cause.non_retryable
    assert expected in cause.message
    history = await handle.fetch_history()
    assert not any(
        e.activity_task_scheduled_event_attributes.activity_type.name == "llm_call" for e in history.events
    )


async def test_an_unknown_tool_fails_the_run_at_its_first_call_without_asking_the_model(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("never")], tools=["calculator", "no_such_tool"])
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "invalid_input" and cause.non_retryable
    assert "no_such_tool" in cause.message and "calculator" in cause.message
    history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    assert len(failed) == 1
    failure_info = failed[0].activity_task_failed_event_attributes.failure.application_failure_info
    assert failure_info.type == "unknown_tool"


async def test_input_that_does_not_decode_fails_the_workflow_instead_of_retrying(
    client: Client, task_queue: str
) -> None:
    raw = {"query": "hi", "config": {"model": "scripted", "context_policy": {"max_input_tokens": 0}}}
    handle = await client.start_workflow(
        "ReActRun", raw, id=f"test-undecodable-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), timeout=30)
    assert "max_input_tokens" in str(failure.value.cause)
    assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == "invalid_input"
