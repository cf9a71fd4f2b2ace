"""AgentSession end to end: turns, busy, forwarding, deferred ops, terminated children (real server)."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients import sessions
from contracts import Ack, CancelInput, SteerInput
from contracts.session import RequestRecord
from conversation import Context, ContextOpEntry, Message, MessageEntry, project
from tests.helpers import call, llm_inputs, turn, update, wait_until
from tests.session_helpers import (
    ask,
    ask_sync,
    new_session_id,
    replace_op,
    requests,
    session_thread,
    status,
)


async def wait_running(client: Client, run_workflow_id: str) -> None:
    """Until the run's first LLM call has started."""
    run = client.get_workflow_handle(run_workflow_id)
    await wait_until(run, lambda _s, t: any(e.kind == "llm_started" for e in t.events))


async def test_two_turns_the_second_call_sees_the_first(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    first = await ask_sync(
        client,
        task_queue,
        sid,
        "What is 6 * 7?",
        turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]),
        turn("42"),
    )
    second = await ask_sync(client, task_queue, sid, "And doubled?", turn("84"))
    assert (first.status, first.result, second.result) == ("completed", "42", "84")
    handle = client.get_workflow_handle(sid)
    thread = await session_thread(handle)
    roles = [(e.payload.role, e.payload.request_id) for e in thread if isinstance(e, MessageEntry)]
    assert [r for r, _ in roles] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [e.seq for e in thread] == list(range(len(thread)))
    assert {rid for _, rid in roles[:4]} == {first.request_id} and {rid for _, rid in roles[4:]} == {
        second.request_id
    }
    seen = (await llm_inputs(client.get_workflow_handle(second.run_workflow_id)))[0]
    assert seen["system_prompt"] == "You are a test agent."
    assert [m["content"] for m in seen["messages"]] == [
        "What is 6 * 7?",
        "",
        '{"ok": true, "result": 42}',
        "42",
        "And doubled?",
    ]
    context = await handle.query("context", result_type=Context)
    assert context == project(thread, "default", base_system_prompt="You are a test agent.")


async def test_busy_ask_is_rejected_and_written_nowhere(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    first = await ask(client, task_queue, sid, "slow one", turn("first answer", delay_s=1.5))
    with pytest.raises(WorkflowUpdateFailedError) as rejected:
        await ask(client, task_queue, sid, "second query", turn("never"))
    cause = rejected.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "busy"
    assert first.request_id in cause.message
    record = await sessions.await_result(client, sid, first.request_id)
    assert (record.status, record.result) == ("completed", "first answer")
    handle = client.get_workflow_handle(sid)
    assert "second query" not in [
        e.payload.content for e in await session_thread(handle) if isinstance(e, MessageEntry)
    ]
    assert [r.query_preview for r in await requests(handle)] == ["slow one"]


async def test_steer_and_inject_reach_the_active_run(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    accepted = await ask(client, task_queue, sid, "long task", turn("draft", delay_s=1.5), turn("final"))
    handle = client.get_workflow_handle(sid)
    await wait_running(client, accepted.run_workflow_id)
    ack = await update(
        handle, "steer", SteerInput(content="be concise", expected_request_id=accepted.request_id)
    )
    assert ack.status == "queued" and ack.input_id
    await handle.signal("inject", SteerInput(content="fyi: metric units"))
    record = await sessions.await_result(client, sid, accepted.request_id)
    assert record.result == "final"
    users = [
        e for e in await session_thread(handle) if isinstance(e, MessageEntry) and e.payload.role == "user"
    ]
    assert [e.payload.content for e in users] == ["long task", "be concise", "fyi: metric units"]
    assert users[1].refs["input_id"] == ack.input_id


async def test_control_when_idle_or_mismatched_is_rejected(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    accepted = await ask(client, task_queue, sid, "slow", turn("ok", delay_s=1.0))
    handle = client.get_workflow_handle(sid)
    mismatch = await update(handle, "steer", SteerInput(content="x", expected_request_id="other"))
    assert (mismatch.status, mismatch.reason) == ("rejected", "request_mismatch")
    await sessions.await_result(client, sid, accepted.request_id)
    idle = await update(handle, "steer", SteerInput(content="anyone there?"))
    cancel = await update(handle, "cancel", CancelInput())
    assert (idle.status, idle.reason) == ("rejected", "idle")
    assert (cancel.status, cancel.reason) == ("rejected", "idle")
    assert len(await session_thread(handle)) == 2


async def test_context_op_deferred_across_a_failing_run_is_applied_once(
    client: Client, task_queue: str
) -> None:
    sid = new_session_id()
    accepted = await ask(client, task_queue, sid, "doomed", turn("x", delay_s=1.5, error="auth"))
    handle = client.get_workflow_handle(sid)
    await wait_running(client, accepted.run_workflow_id)
    ack = await update(handle, "context_modify", replace_op("reset-1", "fresh start"))
    assert ack.status == "deferred"
    record = await sessions.await_result(client, sid, accepted.request_id)
    assert record.status == "failed" and record.outcome.error is not None
    thread = await session_thread(handle)
    ops = [e for e in thread if isinstance(e, ContextOpEntry)]
    assert [e.payload.op_id for e in ops] == ["reset-1"] and thread[-1] == ops[0]
    assert (await status(handle)).pending_context_op_id is None
    again = await update(handle, "context_modify", replace_op("reset-1", "fresh start"))
    assert again.status == "duplicate"
    context = await handle.query("context", result_type=Context)
    assert context.messages == [Message(role="user", content="fresh start")]


async def test_run_terminated_from_outside_leaves_the_session_usable(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    accepted = await ask(client, task_queue, sid, "stuck", turn("never", delay_s=60))
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(sid)
    await wait_running(client, accepted.run_workflow_id)
    assert (
        await update(handle, "context_modify", replace_op("after-kill", "clean slate"))
    ).status == "deferred"
    await client.get_workflow_handle(accepted.run_workflow_id).terminate("operator")
    record = await sessions.await_result(client, sid, accepted.request_id)
    assert record.status == "failed" and record.outcome.error is not None
    assert [e.payload.op_id for e in await session_thread(handle) if isinstance(e, ContextOpEntry)] == [
        "after-kill"
    ]
    next_record = await ask_sync(client, task_queue, sid, "still there?", turn("yes"))
    assert next_record.result == "yes"
    seen = (await llm_inputs(client.get_workflow_handle(next_record.run_workflow_id)))[0]
    assert [m["content"] for m in seen["messages"]] == ["clean slate", "still there?"]


async def test_cancel_through_the_session(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    accepted = await ask(client, task_queue, sid, "long", turn("never", delay_s=60))
    handle = client.get_workflow_handle(sid)
    await wait_running(client, accepted.run_workflow_id)
    ack: Ack = await update(handle, "cancel", CancelInput(reason="changed my mind"))
    assert ack.status == "accepted"
    record: RequestRecord = await sessions.await_result(client, sid, accepted.request_id)
    assert record.status == "cancelled" and record.outcome.termination_reason == "cancelled"
    assert (await status(handle)).state == "idle"
