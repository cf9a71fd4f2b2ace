"""Steering a run while a call awaits approval: a queued steer waits, an interrupt ends the wait unrun."""

from __future__ import annotations

import json

from temporalio.client import Client

from contracts import RunResult, SteerInput
from contracts.approval import ApproveInput
from contracts.errors import ALREADY_DECIDED, CANCELLED
from conversation import MessageEntry
from tests.helpers import call, messages, start_run, state_of, turn, update, wait_until


def _tool_results(result: RunResult) -> list[dict[str, object]]:
    return [
        json.loads(entry.payload.content)
        for entry in result.entries
        if isinstance(entry, MessageEntry) and entry.payload.role == "tool"
    ]


async def test_an_interrupt_ends_the_wait_unrun_and_the_model_replans(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("calculator", {"expression": "1+1"}, "w1")]), turn("replanned")],
        tools=["calculator"],
        approval_required=["calculator"],
    )
    await wait_until(handle, lambda s, _t: bool(s.pending_approvals))
    ack = await update(handle, "steer", SteerInput(content="forget it", mode="interrupt"))
    assert ack.status == "queued" and ack.mode == "interrupt"
    result = await handle.result()
    assert result.answer == "replanned"
    (outcome,) = _tool_results(result)
    assert outcome["ok"] is False
    error = outcome["error"]
    assert error == {
        "type": CANCELLED,
        "message": "tool calculator was not run: the user interrupted with new input",
        "details": None,
        "retryable": False,
    }
    assert ("user", "forget it") in messages(result.entries)


async def test_a_queued_steer_waits_for_the_decision_and_a_stopped_wait_cannot_be_approved(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(
        client,
        task_queue,
        [
            turn(tool_calls=[call("calculator", {"expression": "2+2"}, "q1")]),
            turn(tool_calls=[call("calculator", {"expression": "3+3"}, "q2")]),
            turn("done"),
        ],
        tools=["calculator"],
        approval_required=["calculator"],
    )
    await wait_until(handle, lambda s, _t: [p.call_id for p in s.pending_approvals] == ["q1"])
    queued = await update(handle, "steer", SteerInput(content="also say hi"))
    assert queued.status == "queued" and queued.mode == "queue"
    state = await state_of(handle)
    assert [p.call_id for p in state.pending_approvals] == ["q1"]  # the steer did not end the wait
    assert (await update(handle, "approve", ApproveInput(call_id="q1"))).status == "accepted"
    await wait_until(handle, lambda s, _t: [p.call_id for p in s.pending_approvals] == ["q2"])
    await update(handle, "steer", SteerInput(content="stop", mode="interrupt"))
    refused = await update(handle, "approve", ApproveInput(call_id="q2"))
    assert refused.status == "rejected" and refused.reason == ALREADY_DECIDED and refused.call_id == "q2"
    result = await handle.result()
    assert result.answer == "done"
    first, second = _tool_results(result)
    assert first == {"ok": True, "result": 4}
    assert second["ok"] is False
    texts = [text for role, text in messages(result.entries) if role == "user"]
    assert texts.index("also say hi") < texts.index("stop")
