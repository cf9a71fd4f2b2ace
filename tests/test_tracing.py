"""OpenTelemetry tracing: one trace from the client's start call through the run to its activities.

A client and a worker of the plugin with a `TracerProvider` of the test's (an in-memory
exporter) run scripted runs on the tests' dev server; the finished spans are checked:
one trace id, parents by span id, the GenAI attributes, contents only when asked for,
and never a secret of the worker's environment.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from temporalio.client import Client
from temporalio.worker import Worker

from clients import sessions
from contracts import RunResult
from contracts.session import AskInput
from hosting.plugin import DurableReactPlugin
from payloads.blob_store import BlobStore
from payloads.redaction import REDACTED
from testing import answer, call_tools, script_overrides, scripted_agent, tool_call, with_provider_error
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run, turn

SENTINEL = "sk-sentinel-" + "5e1f0c2a9b7d4e6f8a3c1b0d"


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


class Traced:
    """A traced client and worker, and the spans they finished."""

    def __init__(self, client: Client, task_queue: str, exporter: InMemorySpanExporter) -> None:
        self.client = client
        self.task_queue = task_queue
        self.exporter = exporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@asynccontextmanager
async def traced_worker(
    client: Client, store: BlobStore, *, capture_content: bool = False, sandboxed: bool = False
) -> AsyncIterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plugin = DurableReactPlugin(
        store=store,
        registry=registry_for_tests(),
        tracer_provider=provider,
        capture_content=capture_content,
        sandboxed=sandboxed,
    )
    traced_client = await Client.connect(address_of(client), namespace=client.namespace, plugins=[plugin])
    task_queue = f"react-traced-{uuid.uuid4().hex[:8]}"
    async with Worker(traced_client, task_queue=task_queue, max_cached_workflows=0):
        yield Traced(traced_client, task_queue, exporter)
    provider.shutdown()


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def parent_of(spans: Sequence[ReadableSpan], span: ReadableSpan) -> ReadableSpan:
    assert span.parent is not None, span.name
    parents = [s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id]
    assert len(parents) == 1, (span.name, [s.name for s in spans])
    return parents[0]


def chain(spans: Sequence[ReadableSpan], span: ReadableSpan) -> list[str]:
    """The names from `span` up to its trace's root."""
    names = [span.name]
    while span.parent is not None:
        span = parent_of(spans, span)
        names.append(span.name)
    return names


def every_text(spans: Sequence[ReadableSpan]) -> Iterator[str]:
    """Every attribute value, event, status and resource attribute of the spans, as text."""
    for span in spans:
        yield span.name
        yield str(dict(span.attributes or {}))
        yield span.status.description or ""
        yield str(dict(span.resource.attributes))
        for event in span.events:
            yield event.name
            yield str(dict(event.attributes or {}))
        for link in span.links:
            yield str(dict(link.attributes or {}))


ECHO_SCRIPT = (
    call_tools(tool_call("echo", {"text": "hi"}, call_id="call-echo-1")),
    answer("The echo said hi."),
)


async def run_with_tool(traced: Traced, *, query: str = "What is 6 * 7?", text: str = "hi") -> RunResult:
    script = [
        call_tools(tool_call("echo", {"text": text}, call_id="call-echo-1")),
        answer("The echo said hi."),
    ]
    handle = await start_run(traced.client, traced.task_queue, script, tools=["echo"], query=query)
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
    async with traced_worker(client, store, sandboxed=sandboxed) as traced:
        result = await run_with_tool(traced, query="What does the echo say?")
    assert result.status == "completed"
    spans = traced.spans()
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    root = one(spans, "StartWorkflow:ReActRun")
    assert root.parent is None and root.kind is SpanKind.CLIENT
    assert parent_of(spans, one(spans, "RunWorkflow:ReActRun")) is root
    chats, tools = named(spans, "chat "), named(spans, "execute_tool ")
    assert [s.name for s in chats] == ["chat scripted", "chat scripted"]
    for span in chats:
        assert chain(spans, span) == [
            "chat scripted",
            "RunActivity:llm_call",
            "StartActivity:llm_call",
            root.name,
        ]
    assert [chain(spans, s) for s in tools] == [
        ["execute_tool echo", "RunActivity:run_tool", "StartActivity:run_tool", root.name]
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
    assert not [text for text in every_text(spans) if "What does the echo say?" in text]


async def test_contents_only_when_asked_for_and_never_a_secret(
    client: Client, store: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    async with traced_worker(client, store, capture_content=True) as traced:
        result = await run_with_tool(
            traced, query=f"My key is {SENTINEL}. What is 6 * 7?", text=f"key {SENTINEL}"
        )
    assert result.status == "completed"
    spans = traced.spans()
    chats, tool = named(spans, "chat "), one(spans, "execute_tool echo")
    first = json.loads(str(dict(chats[0].attributes or {})["gen_ai.input.messages"]))
    assert first == [
        {"role": "user", "parts": [{"type": "text", "content": f"My key is {REDACTED}. What is 6 * 7?"}]}
    ]
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
    assert not [text for text in every_text(spans) if SENTINEL in text]


async def test_failures_set_the_span_status(client: Client, store: BlobStore) -> None:
    script = [
        with_provider_error(call_tools(tool_call("echo", {"wrong": 1}, call_id="call-bad")), "rate_limit"),
        turn("Done."),
    ]
    async with traced_worker(client, store) as traced:
        handle = await start_run(traced.client, traced.task_queue, script, tools=["echo"])
        result = await handle.result()
    assert result.status == "completed"
    spans = traced.spans()
    chats = named(spans, "chat ")
    assert [s.status.status_code for s in chats] == [StatusCode.ERROR, StatusCode.UNSET, StatusCode.UNSET]
    assert dict(chats[0].attributes or {})["error.type"] == "ApplicationError"
    tool = one(spans, "execute_tool echo")
    assert tool.status.status_code is StatusCode.ERROR
    assert dict(tool.attributes or {})["error.type"] == tool.status.description


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
