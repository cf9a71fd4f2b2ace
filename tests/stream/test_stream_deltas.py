"""The LLM activity streams deltas to its workflow's Workflow Stream (real dev server, real worker).

`DeltaProbe` is a test-only workflow: it hosts a `WorkflowStream`, as a run does, and
calls the real LLM activity (registered by `DurableReactPlugin`) with a stream target.
Once it has ended, its stream's log is read back by query: every `DeltaEvent` the
activity published, in order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.contrib.workflow_streams import PublishInput, WorkflowStream, WorkflowStreamClient
from temporalio.exceptions import ActivityError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from activities import LLMActivities, default_registry
from activities.llm.delta_publisher import MAX_BATCH_CHARS
from activities.llm.message_cache import MessageCache
from contracts import LLMRequest, LLMResponse, ModelSettings, ScriptedCall, ScriptTurn
from contracts.activities import LLM_ACTIVITY
from contracts.agent import ScriptToolCall
from contracts.llm import StreamTarget
from contracts.stream import EVENTS_TOPIC, DeltaEvent
from conversation import Message
from hosting.plugin import DurableReactPlugin
from payloads.blob_store import BlobStore
from testing import AgentTestEnvironment, scripted_agent
from tests.fake_openai import FakeOpenAI, chat_completion, tool_call

CALL = 3
INTERVAL_S = 0.05


class ProbeInput(BaseModel):
    request: LLMRequest
    cancel_after_s: float | None = None


class ProbeResult(BaseModel):
    response: LLMResponse | None = None
    stopped_after_s: float | None = None


class CountingStream(WorkflowStream):
    """A Workflow Stream that counts the batches published to it."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def _on_publish(self, payload: PublishInput) -> None:
        super()._on_publish(payload)
        self.batches += 1


@workflow.defn(sandboxed=False)
class DeltaProbe:
    """Hosts a Workflow Stream and makes one LLM call (cancelled `cancel_after_s` after its first batch)."""

    @workflow.init
    def __init__(self, probe: ProbeInput) -> None:
        self.stream = CountingStream()

    @workflow.run
    async def run(self, probe: ProbeInput) -> ProbeResult:
        call = workflow.start_activity(
            LLM_ACTIVITY,
            probe.request,
            result_type=LLMResponse,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=3),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        if probe.cancel_after_s is None:
            return ProbeResult(response=await call)
        await workflow.wait_condition(lambda: self.stream.batches > 0)
        await workflow.sleep(probe.cancel_after_s)
        call.cancel()
        cancelled_at = workflow.now()
        try:
            await call
        except ActivityError:
            pass
        return ProbeResult(stopped_after_s=(workflow.now() - cancelled_at).total_seconds())


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def probe_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    queue = f"delta-probe-{uuid.uuid4().hex[:8]}"
    plugin = DurableReactPlugin(store=store)
    async with Worker(
        client, task_queue=queue, workflows=[DeltaProbe], plugins=[plugin], max_cached_workflows=0
    ):
        yield queue


async def probe(
    client: Client, queue: str, request: LLMRequest, **options: float
) -> tuple[ProbeResult, list[DeltaEvent]]:
    """Run the probe to its end; its result and every delta its stream kept."""
    workflow_id = f"delta-probe-{uuid.uuid4().hex[:8]}"
    result = await client.execute_workflow(
        DeltaProbe.run, ProbeInput(request=request, **options), id=workflow_id, task_queue=queue
    )
    stream = WorkflowStreamClient.create(client, workflow_id)
    items = stream.subscribe([EVENTS_TOPIC], result_type=DeltaEvent, poll_cooldown=timedelta(0))
    return result, [item.data async for item in items]


def scripted(turn: ScriptTurn, *, stream: bool = True, tools: list[str] | None = None) -> LLMRequest:
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=tools or [],
        iteration=CALL,
        scripted=ScriptedCall(index=CALL, length=CALL + 1, turn=turn),
        stream=StreamTarget(call=CALL, interval_s=INTERVAL_S) if stream else None,
    )


def arguments(deltas: list[DeltaEvent], index: int) -> str:
    return "".join(d.arguments for event in deltas for d in event.tool_calls if d.index == index)


async def test_deltas_arrive_in_order_and_add_up_to_the_answer(client: Client, probe_queue: str) -> None:
    turn = ScriptTurn(
        content="Six times seven is forty-two, which the calculator will confirm.",
        thinking="Multiply, then check.",
        tool_calls=[ScriptToolCall(name="calculator", arguments={"expression": "6 * 7"})],
        chunk_chars=4,
        chunk_delay_s=0.01,
    )
    result, deltas = await probe(client, probe_queue, scripted(turn, tools=["calculator"]))
    plain, none = await probe(client, probe_queue, scripted(turn, stream=False, tools=["calculator"]))
    response = result.response
    assert response is not None and response == plain.response
    assert none == []  # an unstreamed call publishes nothing
    assert [(d.call, d.attempt, d.seq) for d in deltas] == [(CALL, 1, k) for k in range(len(deltas))]
    assert deltas[0].thinking == "Mult" and deltas[0].text == ""  # the first piece goes out alone, at once
    assert "".join(d.text for d in deltas) == response.content
    assert "".join(d.thinking for d in deltas) == response.thinking
    assert arguments(deltas, 0) == response.tool_calls[0].arguments
    named = [d for event in deltas for d in event.tool_calls if d.name is not None]
    assert [(d.id, d.name) for d in named] == [(response.tool_calls[0].id, "calculator")]
    pieces = 6 + 16 + 6  # thinking, content and arguments, four characters at a time
    assert len(deltas) < pieces  # gathered into batches


async def test_a_retried_attempts_deltas_carry_its_attempt(client: Client, probe_queue: str) -> None:
    content = "".join(f"piece {k:02d}." for k in range(8))
    turn = ScriptTurn(content=content, error="server", chunk_chars=9, chunk_delay_s=0.01)
    result, deltas = await probe(client, probe_queue, scripted(turn))
    assert result.response is not None and result.response.content == content
    attempts = [d.attempt for d in deltas]
    assert attempts == sorted(attempts) and set(attempts) == {1, 2}
    first = [d for d in deltas if d.attempt == 1]
    second = [d for d in deltas if d.attempt == 2]
    assert "".join(d.text for d in first) == content[: 4 * 9]  # half its pieces, then the error
    assert "".join(d.text for d in second) == content
    assert [d.seq for d in first] == list(range(len(first)))
    assert [d.seq for d in second] == list(range(len(second)))


async def test_a_fast_answer_goes_out_in_bounded_batches(client: Client, probe_queue: str) -> None:
    content = "".join(f"{k:07d} " for k in range(12_500))  # 100,000 characters, no delay between pieces
    result, deltas = await probe(
        client, probe_queue, scripted(ScriptTurn(content=content, chunk_chars=1_000))
    )
    assert result.response is not None and result.response.content == content
    assert "".join(d.text for d in deltas) == content
    assert len(deltas) >= 3 and all(len(d.text) < MAX_BATCH_CHARS + 1_000 for d in deltas)


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/my-model"])
async def test_the_provider_routes_stream_the_unstreamed_answer(
    client: Client, probe_queue: str, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # openai/: litellm's OpenAI provider called directly; hosted_vllm/: litellm.acompletion.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    body = chat_completion(
        "Let me use the calculator.", [tool_call("calculator", '{"expression": "6 * 7"}', "call_x")]
    )
    body["choices"][0]["message"]["reasoning_content"] = "It is a multiplication."
    async with FakeOpenAI(default=body) as server:
        request = LLMRequest(
            model=model,
            messages=[Message(role="user", content="What is 6 * 7?")],
            tools=["calculator"],
            settings=ModelSettings(extra={"api_base": server.base_url}),
            timeout_s=10,
            iteration=CALL,
        )
        plain, none = await probe(client, probe_queue, request)
        streamed_request = request.model_copy(
            update={"stream": StreamTarget(call=CALL, interval_s=INTERVAL_S)}
        )
        result, deltas = await probe(client, probe_queue, streamed_request)
    assert none == [] and result.response is not None and plain.response is not None
    # litellm names a streamed answer's model as requested, an unstreamed one as the server answered.
    model_name = {"model": model.removeprefix("hosted_vllm/")} if model.startswith("hosted_vllm/") else {}
    assert result.response == plain.response.model_copy(update=model_name)
    assert result.response.usage.total_tokens == 18 and result.response.thinking == "It is a multiplication."
    assert "".join(d.text for d in deltas) == "Let me use the calculator."
    assert arguments(deltas, 0) == '{"expression": "6 * 7"}'
    assert not server.requests[0].body.get("stream")
    assert server.requests[1].body["stream"] is True
    assert server.requests[1].body["stream_options"] == {"include_usage": True}


async def test_a_cancelled_call_stops_streaming(client: Client, probe_queue: str) -> None:
    content = "".join(f"{k:03d} " for k in range(100))
    turn = ScriptTurn(content=content, chunk_chars=4, chunk_delay_s=0.05)  # five seconds of pieces
    result, deltas = await probe(client, probe_queue, scripted(turn), cancel_after_s=1.0)
    assert result.stopped_after_s is not None
    # The cancel reaches the activity with its next heartbeat (throttled to 2 s); room for a loaded machine.
    assert result.stopped_after_s < 4.5
    text = "".join(d.text for d in deltas)
    assert text and content.startswith(text) and len(text) < len(content)


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/my-model"])
async def test_a_cancelled_call_hangs_up_on_the_provider(
    client: Client, probe_queue: str, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    content = "".join(f"{k:03d} " for k in range(100))
    async with FakeOpenAI() as server:
        server.reply(chat_completion(content), chunk_chars=4, chunk_delay_s=0.05)  # five seconds of chunks
        request = LLMRequest(
            model=model,
            messages=[Message(role="user", content="Count.")],
            settings=ModelSettings(extra={"api_base": server.base_url}),
            iteration=CALL,
            stream=StreamTarget(call=CALL, interval_s=INTERVAL_S),
        )
        result, deltas = await probe(client, probe_queue, request, cancel_after_s=0.5)
        assert result.stopped_after_s is not None and result.stopped_after_s < 4.5
        text = "".join(d.text for d in deltas)
        assert text and content.startswith(text) and len(text) < len(content)
        await asyncio.wait_for(server.stream_cut.wait(), timeout=10)


async def test_publishing_never_fails_the_call(
    client: Client, store: BlobStore, caplog: pytest.LogCaptureFixture
) -> None:
    # A workflow that does not exist (the run has ended), then no client at all: the call still answers.
    llm_call = LLMActivities(default_registry(), MessageCache(store)).llm_call
    request = scripted(ScriptTurn(content="Forty-two.", chunk_chars=2))
    gone = ActivityEnvironment(client=client)
    gone.info = dataclasses.replace(gone.info, workflow_id=f"no-such-run-{uuid.uuid4().hex[:8]}")
    expected = await ActivityEnvironment().run(llm_call, request.model_copy(update={"stream": None}))
    with caplog.at_level(logging.INFO, logger="activities.llm.delta_publisher"):
        assert await gone.run(llm_call, request) == expected
        assert await ActivityEnvironment().run(llm_call, request) == expected
    # An ended run is nobody's problem (info); an activity without a workflow is worth a warning.
    assert [(r.levelname, r.getMessage().split(": ")[1]) for r in caplog.records] == [
        ("INFO", "its run has ended; not publishing the rest"),
        ("WARNING", "cannot stream deltas from this activity"),
    ]


async def test_a_streaming_run_streams_its_answer(agents: AgentTestEnvironment) -> None:
    content = "Six times seven is forty-two; " * 4
    turn = ScriptTurn(content=content, chunk_chars=6, chunk_delay_s=0.01)
    run = await agents.runs.start("What is 6 * 7?", scripted_agent(turn, stream=True, stream_interval_s=0.05))
    deltas = [event async for event in run.events(poll_cooldown_s=0.01) if isinstance(event, DeltaEvent)]
    result = await run.result()
    assert result.result == content
    assert [(d.call, d.attempt, d.seq) for d in deltas] == [(0, 1, k) for k in range(len(deltas))]
    assert "".join(d.text for d in deltas) == content
