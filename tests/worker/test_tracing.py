"""OpenTelemetry tracing: one trace from the client's start call through the run to its activities.

A client and a worker of the plugin with a `TracerProvider` of the test's (an in-memory
exporter) run scripted runs on the tests' dev server; the finished spans are checked:
one trace id, parents by span id, the GenAI attributes, contents only when asked for,
and never a secret of the worker's environment.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from clients import sessions
from contracts import RunResult
from contracts.session import AskInput
from payloads.blob_store import BlobStore
from payloads.redaction import REDACTED
from testing import answer, call_tools, script_overrides, scripted_agent, tool_call, with_provider_error
from tests.helpers import start_run, turn
from tests.tracing_helpers import Traced, chain, every_text, named, one, parent_of, traced_worker

QUERY = "What does the echo say?"
SENTINEL = "sk-sentinel-" + "5e1f0c2a9b7d4e6f8a3c1b0d"
PLAIN_SENTINEL = "plain-sentinel-" + "93b0e7d2c4a8"


ECHO_SCRIPT = (
    call_tools(tool_call("echo", {"text": "hi"}, call_id="call-echo-1")),
    answer("The echo said hi."),
)


async def run_with_tool(traced: Traced, *, query: str, text: str, **config: Any) -> RunResult:
    script = [
        call_tools(tool_call("echo", {"text": text}, call_id="call-echo-1")),
        answer("The echo said hi."),
    ]
    handle = await start_run(traced.client, traced.task_queue, script, tools=["echo"], query=query, **config)
    return await handle.result()


CONTENT_ATTRIBUTES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_one_trace_from_the_client_s_start_through_the_run_to_its_activities(
    client: Client, store: BlobStore, sandboxed: bool
) -> None:
    # `shout` is a local tool: the run executes it as a local activity.
    calls = call_tools(
        tool_call("echo", {"text": "hi"}, call_id="call-echo-1"), tool_call("shout", {"text": "hi"})
    )
    script = [calls, answer("The echo said hi.")]
    async with traced_worker(client, store, sandboxed=sandboxed) as traced:
        handle = await start_run(
            traced.client, traced.task_queue, script, tools=["echo", "shout"], query=QUERY
        )
        result = await handle.result()
    assert result.status == "completed"
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert sorted(scheduled) == ["llm_call", "llm_call", "run_tool"]  # shout ran as a local activity
    spans = traced.spans()
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    root = one(spans, "StartWorkflow:ReActRun")
    assert root.parent is None and root.kind is SpanKind.CLIENT
    assert parent_of(spans, one(spans, "RunWorkflow:ReActRun")) is root
    chats, tools = named(spans, "chat "), sorted(named(spans, "execute_tool "), key=lambda s: s.name)
    assert [s.name for s in chats] == ["chat scripted", "chat scripted"]
    for span in chats:
        assert chain(spans, span) == [
            "chat scripted",
            "RunActivity:llm_call",
            "StartActivity:llm_call",
            root.name,
        ]
    assert [chain(spans, s) for s in tools] == [
        ["execute_tool echo", "RunActivity:run_tool", "StartActivity:run_tool", root.name],
        ["execute_tool shout", "RunActivity:run_tool", "StartActivity:run_tool", root.name],
    ]
    # The GenAI attributes: the request, the answers and the scripted model's usage.
    for span in chats:
        attributes = dict(span.attributes or {})
        assert span.kind is SpanKind.CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "scripted"
        assert (attributes["gen_ai.request.max_tokens"], attributes["gen_ai.request.temperature"]) == (
            4096,
            0.2,
        )
        assert isinstance(attributes["gen_ai.response.model"], str)
    finish = [tuple(s.attributes["gen_ai.response.finish_reasons"]) for s in chats]  # type: ignore[index]
    assert finish == [("tool_calls",), ("stop",)]
    usage = result.outcome.usage
    assert sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in chats) == usage.prompt_tokens > 0  # type: ignore[index, arg-type]
    assert sum(int(s.attributes["gen_ai.usage.output_tokens"]) for s in chats) == usage.completion_tokens > 0  # type: ignore[index, arg-type]
    tool = dict(tools[0].attributes or {})
    assert tool == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": "call-echo-1",
        "gen_ai.tool.type": "function",
    }
    assert tools[0].status.status_code is StatusCode.UNSET
    # No contents by default.
    assert not [name for s in spans for name in (s.attributes or {}) if name in CONTENT_ATTRIBUTES]
    assert not [text for text in every_text(spans) if QUERY in text]


async def test_contents_only_when_asked_for_and_never_a_secret(
    client: Client, store: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key of a well-known shape, and one only the worker's environment says is a secret.
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    monkeypatch.setenv("BILLING_SERVICE_TOKEN", PLAIN_SENTINEL)
    query = f"My keys are {SENTINEL} and {PLAIN_SENTINEL}."
    async with traced_worker(client, store, capture_content=True) as traced:
        result = await run_with_tool(traced, query=query, text=f"key {SENTINEL}", system_prompt="Be brief.")
    assert result.status == "completed"
    spans = traced.spans()
    chats, tool = named(spans, "chat "), one(spans, "execute_tool echo")
    first = json.loads(str(dict(chats[0].attributes or {})["gen_ai.input.messages"]))
    text = f"My keys are {REDACTED} and {REDACTED}."
    assert first == [{"role": "user", "parts": [{"type": "text", "content": text}]}]
    system = json.loads(str(dict(chats[0].attributes or {})["gen_ai.system_instructions"]))
    assert system == [{"type": "text", "content": "Be brief."}]
    # The second call sends the assistant's message by reference (the worker has it) and the tool's result.
    second = json.loads(str(dict(chats[1].attributes or {})["gen_ai.input.messages"]))
    assert [(m["role"], m["parts"][0]["type"]) for m in second] == [
        ("assistant", "message_ref"),
        ("tool", "tool_call_response"),
    ]
    assert json.loads(second[1]["parts"][0]["response"]) == {"ok": True, "result": f"key {REDACTED}"}
    output = json.loads(str(dict(chats[1].attributes or {})["gen_ai.output.messages"]))
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "The echo said hi."}],
            "finish_reason": "stop",
        }
    ]
    calls = json.loads(str(dict(chats[0].attributes or {})["gen_ai.output.messages"]))[0]["parts"]
    assert [(p["type"], p["name"], p["id"]) for p in calls] == [("tool_call", "echo", "call-echo-1")]
    arguments = json.loads(str(dict(tool.attributes or {})["gen_ai.tool.call.arguments"]))
    assert arguments == {"text": f"key {REDACTED}"}
    assert json.loads(str(dict(tool.attributes or {})["gen_ai.tool.call.result"])) == {
        "ok": True,
        "result": f"key {REDACTED}",
    }
    assert not [text for text in every_text(spans) if SENTINEL in text or PLAIN_SENTINEL in text]


async def test_failures_set_the_span_status_and_keep_secrets_out(
    client: Client, store: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BILLING_SERVICE_TOKEN", PLAIN_SENTINEL)
    # `flaky` raises "transient failure for <key>" once: the key carries the secret.
    calls = [
        tool_call("echo", {"wrong": 1}, call_id="call-bad"),
        tool_call("flaky", {"key": PLAIN_SENTINEL + "-1"}),
    ]
    script = [with_provider_error(call_tools(*calls), "rate_limit"), turn("Done.")]
    async with traced_worker(client, store) as traced:
        handle = await start_run(traced.client, traced.task_queue, script, tools=["echo", "flaky"])
        result = await handle.result()
    assert result.status == "completed"
    spans = traced.spans()
    chats = named(spans, "chat ")
    assert [s.status.status_code for s in chats] == [StatusCode.ERROR, StatusCode.UNSET, StatusCode.UNSET]
    assert dict(chats[0].attributes or {})["error.type"] == "ApplicationError"
    tool = one(spans, "execute_tool echo")  # a failed outcome, not an exception
    assert tool.status.status_code is StatusCode.ERROR
    assert dict(tool.attributes or {})["error.type"] == tool.status.description
    flaky = named(spans, "execute_tool flaky")
    assert [s.status.status_code for s in flaky] == [StatusCode.ERROR, StatusCode.UNSET]
    assert REDACTED in (flaky[0].status.description or "")
    # Temporal's activity span records the (redacted) exception as an event.
    events = [e for s in named(spans, "RunActivity:run_tool") for e in s.events if e.name == "exception"]
    assert len(events) == 1 and REDACTED in str(dict(events[0].attributes or {}))
    assert not [text for text in every_text(spans) if PLAIN_SENTINEL in text]


async def test_a_session_s_run_is_a_child_in_the_ask_s_trace(client: Client, store: BlobStore) -> None:
    session_id = sessions.session_workflow_id(f"test-{uuid.uuid4().hex[:10]}")
    async with traced_worker(client, store) as traced:
        accepted = await sessions.ask(
            traced.client,
            session_id,
            AskInput(query="What does the echo say?", overrides=script_overrides(*ECHO_SCRIPT)),
            agent_id="test-agent",
            config=scripted_agent(tools=["echo"]),
            task_queue=traced.task_queue,
        )
        result = await sessions.await_result(traced.client, session_id, accepted.request_id)
    assert result.status == "completed"
    spans = traced.spans()
    assert len({s.context.trace_id for s in spans if s.context and s.parent}) == 1
    root = one(spans, "StartUpdateWithStartWorkflow:AgentSession")
    child = one(spans, "RunWorkflow:ReActRun")
    assert dict(child.attributes or {})["temporalWorkflowID"] == accepted.run_workflow_id
    assert chain(spans, child) == [child.name, "StartChildWorkflow:ReActRun", root.name]
    assert chain(spans, one(spans, "execute_tool echo")) == [
        "execute_tool echo",
        "RunActivity:run_tool",
        "StartActivity:run_tool",
        "StartChildWorkflow:ReActRun",
        root.name,
    ]
    assert len(named(spans, "chat ")) == 2
    assert {tuple(chain(spans, s)[1:]) for s in named(spans, "chat ")} == {
        ("RunActivity:llm_call", "StartActivity:llm_call", "StartChildWorkflow:ReActRun", root.name)
    }


async def test_a_run_started_without_a_trace_has_activity_spans_only(
    client: Client, store: BlobStore
) -> None:
    """The trace starts at the client: the tests' untraced client starts this run on a traced worker."""
    async with traced_worker(client, store) as traced:
        handle = await start_run(client, traced.task_queue, list(ECHO_SCRIPT), tools=["echo"])
        assert (await handle.result()).status == "completed"
    spans = traced.spans()
    assert (
        not named(spans, "StartWorkflow")
        and not named(spans, "RunWorkflow")
        and not named(spans, "StartActivity")
    )
    runs = named(spans, "RunActivity:")
    assert sorted(s.name for s in runs) == [
        "RunActivity:llm_call",
        "RunActivity:llm_call",
        "RunActivity:run_tool",
    ]
    assert all(s.parent is None for s in runs)
    assert len({s.context.trace_id for s in runs if s.context}) == 3
    assert [chain(spans, s) for s in named(spans, "execute_tool ")] == [
        ["execute_tool echo", "RunActivity:run_tool"]
    ]


async def test_an_agent_tool_s_child_run_continues_the_caller_s_trace(
    client: Client, store: BlobStore
) -> None:
    helper = {"name": "translator", "config": {"model": "scripted", "script": [{"content": "bonjour"}]}}
    script = [call_tools(tool_call("translator", {"query": "hello"}, call_id="call-agent-1")), answer("done")]
    async with traced_worker(client, store) as traced:
        handle = await start_run(traced.client, traced.task_queue, script, agents=[helper])
        assert (await handle.result()).answer == "done"
    spans = traced.spans()
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    root = one(spans, "StartWorkflow:ReActRun")
    start_child = one(spans, "StartChildWorkflow:ReActRun")
    assert chain(spans, start_child) == [start_child.name, root.name]
    runs = {
        str(dict(s.attributes or {})["temporalWorkflowID"]): s for s in named(spans, "RunWorkflow:ReActRun")
    }
    assert set(runs) == {handle.id, f"{handle.id}/agent-1"}
    assert chain(spans, runs[f"{handle.id}/agent-1"]) == ["RunWorkflow:ReActRun", start_child.name, root.name]
    # The child's LLM call nests under the parent's StartChildWorkflow span; the caller's under its root.
    chains = sorted(chain(spans, s) for s in named(spans, "chat "))
    assert chains == sorted(
        [
            ["chat scripted", "RunActivity:llm_call", "StartActivity:llm_call", root.name],
            ["chat scripted", "RunActivity:llm_call", "StartActivity:llm_call", root.name],
            ["chat scripted", "RunActivity:llm_call", "StartActivity:llm_call", start_child.name, root.name],
        ]
    )
