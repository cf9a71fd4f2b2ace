"""Steering, injection and cancellation of a running ReActRun."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from contracts import Ack, CancelInput, RunResult, SteerInput
from conversation import MessageEntry, project
from tests.helpers import (
    call,
    context_of,
    llm_inputs,
    messages,
    start_run,
    started_llm_calls,
    thread_of,
    trace_of,
    turn,
    update,
    wait_until,
)


async def steer(handle: WorkflowHandle[Any, RunResult], content: str, **fields: Any) -> Ack:
    return await update(handle, "steer", SteerInput(content=content, **fields))


async def test_steer_during_slow_llm_call_is_drained_before_the_next_call(
    client: Client, task_queue: str
) -> None:
    script = [turn(tool_calls=[call("echo", {"text": "x"})], delay_s=1.5), turn("final")]
    handle = await start_run(client, task_queue, script, tools=["echo"])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    ack = await steer(handle, "Use metric units.", source="test")
    assert ack.status == "queued" and ack.input_id
    result = await handle.result()
    assert messages(result.entries) == [
        ("user", "What is 6 * 7?"),
        ("assistant", ""),
        ("tool", '{"ok": true, "result": "x"}'),
        ("user", "Use metric units."),
        ("assistant", "final"),
    ]
    steer_entry = result.entries[3]
    assert isinstance(steer_entry, MessageEntry)
    assert steer_entry.refs["input_id"] == ack.input_id and steer_entry.refs["source"] == "test"
    kinds = [e.kind for e in (await trace_of(handle)).events]
    assert kinds.index("input_injected") < [i for i, k in enumerate(kinds) if k == "llm_started"][1]
    second_call = (await llm_inputs(handle))[1]
    assert second_call["messages"][-1] == {"role": "user", "content": "Use metric units."}


async def test_steer_while_final_answer_is_produced_continues_the_run(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("draft answer", delay_s=1.5), turn("revised answer")])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    assert (await steer(handle, "Actually, answer in French.")).status == "queued"
    result = await handle.result()
    assert result.status == "completed" and result.result == "revised answer"
    assert result.outcome.iterations == 2
    assert messages(result.entries)[1:] == [
        ("assistant", "draft answer"),
        ("user", "Actually, answer in French."),
        ("assistant", "revised answer"),
    ]


async def test_inject_signal_and_rejections(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("a", delay_s=1.5), turn("b")])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    await handle.signal("inject", SteerInput(content="context note"))
    blank = await steer(handle, "   ")
    mismatch = await steer(handle, "hi", expected_request_id="someone-else")
    assert (blank.status, blank.reason) == ("rejected", "blank_content")
    assert (mismatch.status, mismatch.reason) == ("rejected", "request_mismatch")
    result = await handle.result()
    assert [c for r, c in messages(result.entries) if r == "user"] == ["What is 6 * 7?", "context note"]
    rejected = [e for e in (await trace_of(handle)).events if e.kind == "input_rejected"]
    assert [e.data["reason"] for e in rejected] == ["blank_content", "request_mismatch"]


async def test_steer_after_completion_is_rejected_and_changes_nothing(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("done")])
    result = await handle.result()
    with pytest.raises(RPCError):
        await steer(handle, "too late")
    assert await thread_of(handle) == result.entries


async def test_queued_input_is_dropped_on_cancel(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("never", delay_s=30)])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    assert (await steer(handle, "queued then dropped")).status == "queued"
    ack = await update(handle, "cancel", CancelInput(reason="user pressed stop"))
    assert ack.status == "accepted"
    result = await handle.result()
    assert result.status == "cancelled" and result.outcome.termination_reason == "cancelled"
    assert result.outcome.error is not None and "user pressed stop" in result.outcome.error.message
    assert messages(result.entries) == [("user", "What is 6 * 7?")]
    last = (await trace_of(handle)).events[-1]
    assert last.kind == "request_cancelled" and last.data["dropped_inputs"] == 1
    # The in-flight LLM activity was asked to cancel (it heartbeats, so it hears it).
    history = await handle.fetch_history()
    assert any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED for e in history.events)


async def test_queued_input_is_dropped_on_failure(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("x", delay_s=1.5, error="auth")])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    assert (await steer(handle, "lost")).status == "queued"
    result = await handle.result()
    assert result.status == "failed"
    assert "lost" not in [c for _, c in messages(result.entries)]


async def test_temporal_cancellation_during_tool_round_closes_dangling_calls(
    client: Client, task_queue: str
) -> None:
    calls = [call("echo", {"text": "quick"}), call("slow", {"seconds": 60})]
    handle = await start_run(
        client, task_queue, [turn(tool_calls=calls), turn("never")], tools=["echo", "slow"]
    )
    await wait_until(handle, lambda s, _t: any(c.status == "ok" for c in s.pending_tool_calls))
    await handle.cancel()
    result = await handle.result()
    assert result.status == "cancelled"
    tool_messages = [json.loads(c) for r, c in messages(result.entries) if r == "tool"]
    assert tool_messages[0] == {"ok": True, "result": "quick"}
    assert tool_messages[1]["ok"] is False and tool_messages[1]["error"]["type"] == "cancelled"
    # Messages of a cancelled run stay in the context: it still equals the projection.
    assert (await context_of(handle)) == project(await thread_of(handle), "default")
    assert len((await context_of(handle)).messages) == 4
