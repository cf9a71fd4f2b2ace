"""The typed client's live streams against the real dev server: a run's events, a session's across runs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.client import Client

from clients.runs import Runs
from clients.sessions import SessionHandle, Sessions
from clients.stream import SessionEvent, TextAssembler
from contracts import AgentConfig, ScriptTurn, TraceEvent
from contracts.stream import DeltaEvent, ToolCallDelta, TraceItem
from tests.helpers import turn
from tests.session.test_session_lifetime import continue_as_new_hops
from tests.session_helpers import new_session_id, script

STORY = "Once upon a time a durable agent streamed its answer, four characters at a time. The end."
MAX_FILLER_ASKS = 40


def streamed(content: str, delay_s: float = 0.05) -> ScriptTurn:
    """A scripted answer sent in chunks of 4 characters, `delay_s` apart."""
    return ScriptTurn(content=content, chunk_chars=4, chunk_delay_s=delay_s)


def check_one_call(events: Sequence[DeltaEvent | TraceItem], answer: str) -> None:
    """One streamed call's deltas: one attempt, batches in order, inside its trace events, = the answer."""
    deltas = [e for e in events if isinstance(e, DeltaEvent)]
    assert "".join(d.text for d in deltas) == answer
    assert {(d.call, d.attempt) for d in deltas} == {(deltas[0].call, 1)}
    assert [d.seq for d in deltas] == list(range(len(deltas)))
    kinds = [e.event.kind if isinstance(e, TraceItem) else "delta" for e in events]
    first, last = kinds.index("delta"), len(kinds) - 1 - kinds[::-1].index("delta")
    assert "llm_started" in kinds[:first] and "llm_completed" in kinds[last:]


def trace_of(events: Sequence[DeltaEvent | TraceItem]) -> list[TraceEvent]:
    return [e.event for e in events if isinstance(e, TraceItem)]


async def test_run_events_stream_the_answer_in_order_and_every_trace_event(
    client: Client, task_queue: str
) -> None:
    config = AgentConfig(model="scripted", stream=True, script=[streamed(STORY)])
    run = await Runs(client, task_queue=task_queue).start("Tell me a story.", config)
    assembler, texts = TextAssembler(), list[str]()
    events: list[DeltaEvent | TraceItem] = []
    async for event in run.events():
        if isinstance(event, TraceItem) and event.event.kind == "llm_completed":
            texts.append(assembler.text)  # what a reader saw just before the call's end
        assembler.add(event)
        events.append(event)
    result = await run.result()
    assert result.status == "completed" and result.answer == STORY
    check_one_call(events, STORY)
    assert texts == [STORY] and assembler.text == ""
    assert trace_of(events) == (await run.trace()).events
    assert [e.seq for e in trace_of(events)] == list(range(1, len(trace_of(events)) + 1))
    # A finished run's stream yields its trace again (what its log kept, then the rest by query).
    again = [e async for e in run.events()]
    assert trace_of(again) == trace_of(events)


async def test_a_run_without_streaming_still_streams_its_trace(client: Client, task_queue: str) -> None:
    config = AgentConfig(model="scripted", script=[turn("no deltas")])
    run = await Runs(client, task_queue=task_queue).start("Hello?", config)
    events = [e async for e in run.events()]
    assert not [e for e in events if isinstance(e, DeltaEvent)]
    assert trace_of(events) == (await run.trace()).events
    assert trace_of(events)[-1].kind == "request_completed"


async def follow(
    session: SessionHandle, from_request: str, seen: list[SessionEvent], last: asyncio.Future[str]
) -> None:
    """Collect the session's events until the request `last` names has ended."""
    async for item in session.events(from_request=from_request):
        seen.append(item)
        ended = isinstance(item.event, TraceItem) and item.event.event.kind == "request_completed"
        if ended and last.done() and item.request_id == last.result():
            return


async def test_session_events_follow_runs_and_continue_as_new(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    session = Sessions(client, task_queue=task_queue).get(sid)
    new_session = AgentConfig(model="scripted", stream=True)
    first = await session.ask("one", config=new_session, overrides=script(streamed("alpha " * 10)))
    seen: list[SessionEvent] = []
    last = asyncio.get_running_loop().create_future()
    following = asyncio.create_task(follow(session, first.request_id, seen, last))
    await session.await_result(first.request_id)
    second = await session.ask_sync("two", overrides=script(streamed("beta " * 10)))
    asked = [first.request_id, second.request_id]
    for i in range(MAX_FILLER_ASKS):  # quick asks until the session has continued as new
        if await continue_as_new_hops(client, sid) >= 1:
            break
        asked.append((await session.ask_sync(f"filler {i}", overrides=script(turn(f"ok {i}")))).request_id)
    assert await continue_as_new_hops(client, sid) >= 1
    final = await session.ask("three", overrides=script(streamed("omega " * 10)))
    asked.append(final.request_id)
    last.set_result(final.request_id)
    await asyncio.wait_for(following, 120)

    by_request: dict[str, list[DeltaEvent | TraceItem]] = {}
    assembler, texts = TextAssembler(), dict[str, str]()  # one assembler for the whole session
    for item in seen:
        by_request.setdefault(item.request_id, []).append(item.event)
        assert item.run_workflow_id.startswith(f"{sid}-run-")
        if isinstance(item.event, TraceItem) and item.event.event.kind == "llm_completed":
            texts[item.request_id] = assembler.text
        assembler.add(item.event)
    assert texts[first.request_id] == "alpha " * 10 and texts[final.request_id] == "omega " * 10
    assert list(by_request) == asked
    for request_id, answer in ((first.request_id, "alpha " * 10), (final.request_id, "omega " * 10)):
        check_one_call(by_request[request_id], answer)
    check_one_call(by_request[second.request_id], "beta " * 10)
    for events in by_request.values():
        seqs = [e.seq for e in trace_of(events)]
        assert seqs == list(range(1, len(seqs) + 1)) and trace_of(events)[-1].kind == "request_completed"


def delta(call: int, attempt: int, text: str, seq: int = 0) -> DeltaEvent:
    return DeltaEvent(call=call, attempt=attempt, seq=seq, text=text)


def trace_item(kind: str, seq: int) -> TraceItem:
    event = TraceEvent.model_validate(
        {
            "seq": seq,
            "at": "2026-01-01T00:00:00Z",
            "kind": kind,
            "iteration": 1,
            "request_id": "r",
            "run_id": "x",
        }
    )
    return TraceItem(event=event)


def test_text_assembler_drops_a_superseded_attempt_and_resets_at_a_call_end() -> None:
    assembler = TextAssembler()
    assert assembler.add(delta(0, 1, "Hel")) and assembler.text == "Hel"
    assert assembler.add(delta(0, 2, "Hi")) and assembler.text == "Hi"  # the retry starts over
    assert not assembler.add(delta(0, 1, "lo", seq=1)) and assembler.text == "Hi"  # the old attempt is stale
    assert assembler.add(delta(0, 2, " there", seq=1)) and assembler.text == "Hi there"
    tool = ToolCallDelta(index=0, id="c1", name="calculator", arguments='{"expression": ')
    assembler.add(
        DeltaEvent(call=0, attempt=2, seq=2, tool_calls=[tool, ToolCallDelta(index=0, arguments='"1+1"}')])
    )
    current = assembler.current
    assert current is not None and current.tool_calls == {
        0: {"id": "c1", "name": "calculator", "arguments": '{"expression": "1+1"}'}
    }
    assert (
        assembler.add(trace_item("llm_interrupted", 3)) and assembler.text == "" and assembler.current is None
    )
    assert not assembler.add(trace_item("tool_started", 4))
    assert not assembler.add(delta(0, 2, " late", seq=3))  # the call has ended
    assert assembler.add(delta(1, 1, "next call")) and assembler.text == "next call"
    assert assembler.add(trace_item("llm_completed", 5)) and assembler.text == ""
    assembler.add(trace_item("request_completed", 6))
    assert assembler.add(delta(0, 1, "a session's next run")) and assembler.text == "a session's next run"


async def test_a_retried_attempts_deltas_are_marked_and_the_assembler_keeps_the_retry(
    client: Client, task_queue: str
) -> None:
    # The first attempt streams half its pieces, then the provider fails (retried by Temporal).
    failing = ScriptTurn(content=STORY, chunk_chars=4, chunk_delay_s=0.02, error="server", error_times=1)
    config = AgentConfig(model="scripted", stream=True, stream_interval_s=0.02, script=[failing])
    run = await Runs(client, task_queue=task_queue).start("Tell me a story.", config)
    assembler, seen = TextAssembler(), list[str]()
    deltas: list[DeltaEvent] = []
    async for event in run.events(poll_cooldown_s=0.02):
        if isinstance(event, TraceItem) and event.event.kind == "llm_completed":
            seen.append(assembler.text)
        assembler.add(event)
        if isinstance(event, DeltaEvent):
            deltas.append(event)
    result = await run.result()
    assert result.status == "completed" and result.answer == STORY
    first = "".join(d.text for d in deltas if d.attempt == 1)
    second = "".join(d.text for d in deltas if d.attempt == 2)
    assert first and STORY.startswith(first) and len(first) < len(STORY)  # the failed attempt's part
    assert second == STORY  # the retry starts over
    assert [d.attempt for d in deltas] == sorted(d.attempt for d in deltas)  # attempt 1's come first
    assert seen == [STORY]  # the assembler dropped the failed attempt's text
