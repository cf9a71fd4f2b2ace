"""`gateway.aisdk.chunks`: a request's run events as the AI SDK's UI message stream chunks (pure)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from contracts.run import TraceKind
from gateway.aisdk.chunks import DONE, UI_MESSAGE_STREAM_HEADERS, Chunk, RequestChunks, error_chunks, sse
from tests.aisdk_helpers import CALL_ID, RunEvent, RunScript, answer_run, approval_run, failed_run


def _render(request_id: str, events: Sequence[RunEvent], origin: int = -1) -> list[Chunk]:
    chunks = RequestChunks(request_id, origin=origin)
    out = chunks.start()
    for event, entries in events:
        out += chunks.feed(event, entries)
    return out


def test_an_answer_streams_as_start_step_text_and_finish() -> None:
    chunks = _render("req-1", answer_run("req-1", "Hello there, world."))
    assert chunks == [
        {"type": "start", "messageId": "req-1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "req-1-c1"},
        {"type": "text-delta", "id": "req-1-c1", "delta": "Hello t"},
        {"type": "text-delta", "id": "req-1-c1", "delta": "here, w"},
        {"type": "text-delta", "id": "req-1-c1", "delta": "orld."},
        {"type": "text-end", "id": "req-1-c1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_the_same_run_renders_the_same_chunks_and_missed_deltas_come_from_the_thread() -> None:
    events = answer_run("req-2", "A durable answer.")
    assert _render("req-2", events) == _render("req-2", events)
    script = RunScript("req-3")
    missed = [(script.trace("request_started"), ()), *script.llm_call(1, "Only half streamed.", streamed=5)]
    chunks = _render("req-3", missed)
    text = "".join(str(c["delta"]) for c in chunks if c["type"] == "text-delta")
    assert text == "Only half streamed."
    assert chunks[-2:] == [{"type": "text-end", "id": "req-3-c1"}, {"type": "finish-step"}]
    no_deltas = [(e, entries) for e, entries in missed if e.type == "trace"]  # a viewer that came late
    late = _render("req-3", no_deltas)
    assert "".join(str(c["delta"]) for c in late if c["type"] == "text-delta") == "Only half streamed."


def test_a_tool_call_waits_for_approval_then_its_output_and_the_answer() -> None:
    before, after = approval_run("req-4")
    chunks = RequestChunks("req-4")
    out = chunks.start()
    for event, entries in before:
        out += chunks.feed(event, entries)
    assert chunks.awaiting == [CALL_ID]
    out += chunks.pause()
    assert {
        "type": "tool-input-available",
        "toolCallId": CALL_ID,
        "toolName": "calculator",
        "input": {"expression": "17 * 23"},
        "dynamic": True,
        "providerExecuted": True,
    } in out
    assert out[-2:] == [
        {"type": "tool-approval-request", "approvalId": CALL_ID, "toolCallId": CALL_ID},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    # The next stream continues the same message: only what came after the wait.
    origin = before[-1][0]
    assert origin.type == "trace"
    continued = _render("req-4", [*before, *after], origin=origin.event.seq)
    kinds = [c["type"] for c in continued]
    assert kinds == [
        "start",
        "tool-approval-response",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert continued[1] == {"type": "tool-approval-response", "approvalId": CALL_ID, "approved": True}
    assert continued[2] == {"type": "tool-output-available", "toolCallId": CALL_ID, "output": "391"}


def test_a_denied_call_is_denied_and_a_failed_tool_an_output_error() -> None:
    before, after = approval_run("req-5", approved=False)
    chunks = _render("req-5", [*before, *after])
    assert {
        "type": "tool-approval-response",
        "approvalId": CALL_ID,
        "approved": False,
        "reason": "not now",
    } in chunks
    assert {"type": "tool-output-denied", "toolCallId": CALL_ID} in chunks
    assert {"type": "tool-output-error", "toolCallId": CALL_ID, "errorText": "denied: not now"} in chunks


def test_a_failed_request_ends_with_its_error_code() -> None:
    chunks = _render("req-6", failed_run("req-6"))
    assert chunks[-4:] == [
        {"type": "text-delta", "id": "req-6-c1", "delta": "Half an"},
        {"type": "text-end", "id": "req-6-c1"},
        {"type": "error", "errorText": "timeout: the LLM call timed out"},
        {"type": "finish", "finishReason": "error", "messageMetadata": {"error": {"code": "timeout"}}},
    ]


def test_a_retried_call_writes_a_new_part_and_thinking_is_reasoning() -> None:
    script = RunScript("req-7")
    events: list[RunEvent] = [
        (script.trace("llm_started", data={"call": 1}), ()),
        (script.delta(1, thinking="Hmm."), ()),
        (script.delta(1, "Bro"), ()),
        (script.delta(1, "Brave", attempt=2), ()),
        (script.delta(1, "late", attempt=1), ()),  # a superseded attempt's late batch
    ]
    chunks = _render("req-7", events)[1:]
    assert chunks == [
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "req-7-c1-thinking"},
        {"type": "reasoning-delta", "id": "req-7-c1-thinking", "delta": "Hmm."},
        {"type": "text-start", "id": "req-7-c1"},
        {"type": "text-delta", "id": "req-7-c1", "delta": "Bro"},
        {"type": "reasoning-end", "id": "req-7-c1-thinking"},
        {"type": "text-end", "id": "req-7-c1"},
        {"type": "text-start", "id": "req-7-c1-a2"},
        {"type": "text-delta", "id": "req-7-c1-a2", "delta": "Brave"},
    ]


def test_sse_framing_headers_and_refusals() -> None:
    assert sse({"type": "text-delta", "id": "a", "delta": "é\n"}) == (
        b'data: {"type":"text-delta","id":"a","delta":"\xc3\xa9\\n"}\n\n'
    )
    assert DONE == b"data: [DONE]\n\n"
    assert UI_MESSAGE_STREAM_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert UI_MESSAGE_STREAM_HEADERS["content-type"] == "text/event-stream"
    refused = error_chunks("busy", "the thread is busy")
    assert json.loads(sse(refused[0])[6:]) == {"type": "error", "errorText": "busy: the thread is busy"}
    assert refused[1]["finishReason"] == "error"


def _sdk_rules_hold(chunks: list[Chunk]) -> None:
    """What the SDK's `processUIMessageStream` requires of a stream (it throws otherwise), and one end."""
    assert chunks[0]["type"] == "start"
    open_parts: set[object] = set()
    tools: set[object] = set()
    for index, chunk in enumerate(chunks):
        kind = chunk["type"]
        assert isinstance(kind, str)
        if kind in ("text-start", "reasoning-start"):
            assert chunk["id"] not in open_parts
            open_parts.add(chunk["id"])
        elif kind in ("text-delta", "reasoning-delta"):
            assert chunk["id"] in open_parts
        elif kind in ("text-end", "reasoning-end"):
            open_parts.remove(chunk["id"])
        elif kind == "tool-input-available":
            tools.add(chunk["toolCallId"])
        elif kind.startswith(("tool-output", "tool-approval")):
            assert chunk.get("toolCallId", chunk.get("approvalId")) in tools
        elif kind == "finish":
            assert index == len(chunks) - 1 and not open_parts


@settings(max_examples=150, deadline=None)
@given(
    answers=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=3),
    pieces=st.integers(1, 6),
    streamed=st.none() | st.integers(0, 40),
    approve=st.booleans(),
    end=st.sampled_from(["request_completed", "request_failed", "request_cancelled"]),
)
def test_any_run_renders_a_stream_the_sdk_accepts_with_every_answer_whole(
    answers: list[str], pieces: int, streamed: int | None, approve: bool, end: TraceKind
) -> None:
    script = RunScript("req-p")
    events: list[RunEvent] = [(script.trace("request_started"), ())]
    for call, answer in enumerate(answers, start=1):
        last = call == len(answers)
        tool = None if last else ("calculator", '{"expression": "1+1"}')
        events += script.llm_call(call, answer, pieces=pieces, streamed=streamed, tool=tool)
        if tool is not None:
            events.append((script.trace("approval_requested", call_id=CALL_ID), ()))
            decided: dict[str, JsonValue] = {"approved": approve, "reason": None if approve else "no"}
            events.append((script.trace("approval_decided", call_id=CALL_ID, data=decided), ()))
            events += script.tool_result("calculator", "2", ok=approve)
    events.append((script.trace(end, data={"error": {"type": "timeout", "message": "slow"}}), ()))
    chunks = _render("req-p", events)
    _sdk_rules_hold(chunks)
    texts: dict[object, str] = {}
    for chunk in chunks:
        if chunk["type"] == "text-delta":
            texts[chunk["id"]] = texts.get(chunk["id"], "") + str(chunk["delta"])
    assert list(texts.values()) == answers
    assert chunks[-1]["type"] == "finish"
