"""Interrupting steer: `mode: interrupt` cuts short the LLM call or tool round in flight and re-plans."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError

from clients import sessions
from clients.runs import Runs
from clients.update_retry import execute_update
from contracts import Ack, RunResult, SteerInput
from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry
from tests.helpers import call, messages, start_run, started_llm_calls, trace_of, turn, wait_until
from tests.session_helpers import ask, new_session_id

LONG = "The quick brown fox jumps over the lazy dog. " * 20
"""About 18 s of streaming at 5 characters every 0.1 s: the interrupt cuts it after 20, also when a
loaded machine delays the follower by seconds (at 4.6 s, CI once saw the run end first)."""
"""225 characters: streamed 5 at a time with 0.1 s between pieces, the call takes about 4.5 s."""


async def steer(handle: WorkflowHandle[Any, RunResult], content: str, **fields: Any) -> Ack:
    return await execute_update(handle, "steer", SteerInput(content=content, **fields), Ack)


async def _seconds_from_steer_to_next_llm_call(handle: WorkflowHandle[Any, RunResult]) -> float:
    """Server time from the steer Update's acceptance to the next LLM call being scheduled."""
    accepted: float | None = None
    async for event in handle.fetch_history_events():
        at = event.event_time.ToMicroseconds() / 1e6
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = at
        elif (
            accepted is not None
            and event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name == "llm_call"
        ):
            return at - accepted
    raise AssertionError("no LLM call was scheduled after the steer")


def _entry_refs(result: RunResult) -> list[dict[str, str]]:
    return [entry.refs for entry in result.entries if isinstance(entry, MessageEntry)]


async def test_interrupt_cancels_the_llm_call_and_calls_again_at_once(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("never seen", delay_s=5), turn("final")])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    ack = await steer(handle, "Stop, answer in French.", mode="interrupt")
    assert ack.status == "queued" and ack.mode == "interrupt"
    result = await handle.result()
    assert result.status == "completed" and result.answer == "final"
    assert messages(result.entries) == [
        ("user", "What is 6 * 7?"),
        ("user", "Stop, answer in French."),
        ("assistant", "final"),
    ]
    assert await _seconds_from_steer_to_next_llm_call(handle) < 1.0
    kinds = [event.kind for event in (await trace_of(handle)).events]
    assert kinds.index("llm_interrupted") < kinds.index("input_injected") < len(kinds) - 1
    assert result.outcome.iterations == 2 and result.outcome.usage.llm_calls == 2  # the cut call: estimated


async def test_interrupt_keeps_what_was_streamed_as_an_interrupted_entry(
    client: Client, task_queue: str
) -> None:
    script = [turn(LONG, chunk_chars=5, chunk_delay_s=0.1), turn("final")]
    handle = await start_run(client, task_queue, script, stream=True, stream_interval_s=0.05)
    seen: list[str] = []

    async def follow() -> None:
        async for event in Runs(client, task_queue=task_queue).get(handle.id).events(poll_cooldown_s=0.05):
            if isinstance(event, DeltaEvent) and event.call == 0:
                seen.append(event.text)
            if isinstance(event, TraceItem) and event.event.kind == "llm_interrupted":
                return

    follower = asyncio.create_task(follow())
    await wait_until(handle, lambda _s, _t: len("".join(seen)) >= 20)
    ack = await steer(handle, "Shorter, please.", mode="interrupt")
    assert ack.mode == "interrupt"
    result = await handle.result()
    await asyncio.wait_for(follower, 30)
    partial = messages(result.entries)[1]
    assert partial[0] == "assistant" and LONG.startswith(partial[1]) and len(partial[1]) < len(LONG)
    assert partial[1].startswith("".join(seen)[:20])
    assert _entry_refs(result)[1]["interrupted"] == "true"
    assert messages(result.entries)[2:] == [("user", "Shorter, please."), ("assistant", "final")]
    assert await _seconds_from_steer_to_next_llm_call(handle) < 1.0


@pytest.mark.parametrize("cancel_tools", [False, True])
async def test_interrupt_during_a_tool_round(client: Client, task_queue: str, cancel_tools: bool) -> None:
    calls = [call("slow", {"seconds": 2, "label": "a"}, "c1"), call("echo", {"text": "b"}, "c2")]
    script = [turn(tool_calls=calls), turn("final")]
    handle = await start_run(client, task_queue, script, tools=["slow", "echo"], tool_concurrency=1)
    await wait_until(handle, lambda s, _t: any(c.name == "slow" for c in s.pending_tool_calls))
    ack = await steer(handle, "Never mind the rest.", mode="interrupt", cancel_tools=cancel_tools)
    assert ack.mode == "interrupt"
    result = await handle.result()
    assert result.status == "completed" and result.answer == "final"
    tool_results = {
        e.payload.tool_call_id: e.payload.content
        for e in result.entries
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    }
    assert set(tool_results) == {"c1", "c2"}  # no call without a result
    assert "was not run: the user interrupted" in tool_results["c2"]
    if cancel_tools:
        assert "was cancelled: the user interrupted" in tool_results["c1"]
    else:
        assert "slept 2" in tool_results["c1"]
    roles = [role for role, _ in messages(result.entries)]
    assert roles == ["user", "assistant", "tool", "tool", "user", "assistant"]
    kinds = [event.kind for event in (await trace_of(handle)).events]
    assert "tool_round_interrupted" in kinds


async def test_interrupt_racing_the_run_end_never_wedges(client: Client, task_queue: str) -> None:
    for delay in (0.0, 0.05, 0.2):
        handle = await start_run(client, task_queue, [turn("done", delay_s=0.2), turn("again")])
        await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
        await asyncio.sleep(delay)
        try:
            ack = await steer(handle, "late", mode="interrupt")
        except RPCError:
            ack = None  # the run had closed: the Update never reached it
        result = await handle.result()
        assert result.status == "completed"
        said = messages(result.entries)
        if ack is not None and ack.status == "queued":
            assert ("user", "late") in said and said[-1][0] == "assistant"
        else:
            assert ("user", "late") not in said


async def test_interrupt_through_a_session_reaches_the_active_run(client: Client, task_queue: str) -> None:
    session_id = new_session_id()
    accepted = await ask(client, task_queue, session_id, "Hello", turn("slow", delay_s=5), turn("final"))
    run = client.get_workflow_handle(accepted.run_workflow_id, result_type=RunResult)
    await wait_until(run, lambda _s, t: started_llm_calls(t) == 1)
    session = client.get_workflow_handle(session_id)
    ack = await execute_update(session, "steer", SteerInput(content="Quick!", mode="interrupt"), Ack)
    assert ack.status == "queued" and ack.mode == "interrupt"
    result = await run.result()
    assert messages(result.entries)[1:] == [("user", "Quick!"), ("assistant", "final")]


async def test_unknown_mode_is_refused_by_name_and_changes_nothing(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("a", delay_s=1), turn("b")])
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
            "steer", {"content": "x", "mode": "shout"}, result_type=Ack
        )
    assert getattr(failure.value.cause, "type", None) == "invalid_input"
    result = await handle.result()
    assert messages(result.entries) == [("user", "What is 6 * 7?"), ("assistant", "a")]


async def test_interrupt_of_an_idle_session_is_refused_by_name(client: Client, task_queue: str) -> None:
    session_id = new_session_id()
    accepted = await ask(client, task_queue, session_id, "Hello", turn("Hi."))
    await sessions.await_result(client, session_id, accepted.request_id)
    session = client.get_workflow_handle(session_id)
    ack = await execute_update(session, "steer", SteerInput(content="Stop!", mode="interrupt"), Ack)
    assert ack.status == "rejected" and ack.reason == "idle"
    records = await session.query("requests")
    assert len(records) == 1  # nothing was started or recorded
