"""Approvals under races and repeated ids, against a real server (issue 23).

Two calls of one round with the same id both wait for approval and both run; an approve
sent with a cancel is acked `accepted` only when the trace records the decision; an edited
approve sent by signal is decided before a plain approve sent after it.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client
from temporalio.service import RPCError

from clients.update_retry import execute_update
from contracts import Ack, CancelInput
from contracts.approval import ApproveInput
from testing import answer, call_tools, tool_call
from tests.approvals.test_approval import calculate, decisions, start, tool_results, waiting
from tests.helpers import trace_of


async def test_two_calls_with_one_id_both_wait_and_both_run(client: Client, task_queue: str) -> None:
    twins = call_tools(
        tool_call("calculator", {"expression": "6 * 7"}, call_id="same"),
        tool_call("calculator", {"expression": "1 + 1"}, call_id="same"),
    )
    run = await start(client, task_queue, twins, answer("Both done."))
    pending = await waiting(run, count=2)
    ids = [p.call_id for p in pending]
    assert len(set(ids)) == 2 and ids[0] == "same", ids
    for call_id in ids:
        assert (await run.approve(call_id)).status == "accepted"
    result = await run.result()
    assert result.status == "completed" and result.answer == "Both done."
    results = tool_results(result)
    assert sorted(r["result"] for r in results.values()) == [2, 42]
    assert sorted(d["call_id"] for d in await decisions(run)) == sorted(ids)


async def test_an_approve_sent_with_a_cancel_is_accepted_only_when_recorded(
    client: Client, task_queue: str
) -> None:
    for trial in range(8):
        run = await start(client, task_queue, calculate(), answer("never"))
        await waiting(run)
        handle = client.get_workflow_handle(run.workflow_id)
        approve = execute_update(handle, "approve", ApproveInput(call_id="calc-1"), Ack)
        cancel = handle.signal("cancel", CancelInput(reason="changed my mind"))
        answers = await asyncio.gather(approve, cancel, return_exceptions=True)
        result = await run.result()
        assert result.status == "cancelled", trial
        decided = await decisions(run)
        ack = answers[0]
        if isinstance(ack, RPCError):  # the run closed before the approve reached it: never decided
            assert "closing workflow" in str(ack) and decided == [], (trial, ack)
            continue
        assert isinstance(ack, Ack), (trial, ack)
        if ack.status == "accepted":
            assert [(d["call_id"], d["verdict"]) for d in decided] == [("calc-1", "approved")], trial
        else:
            assert ack.reason == "not_running" and decided == [], (trial, ack)


async def test_an_edited_approve_by_signal_is_decided_before_a_later_plain_one(
    client: Client, task_queue: str
) -> None:
    run = await start(client, task_queue, calculate(), answer("Done."))
    await waiting(run)
    handle = client.get_workflow_handle(run.workflow_id)
    await handle.signal("approve", ApproveInput(call_id="calc-1", arguments={"expression": "2 + 3"}))
    await handle.signal("approve", ApproveInput(call_id="calc-1"))
    result = await run.result()
    assert tool_results(result)["calc-1"]["result"] == 5  # the edited approve came first
    [decided] = await decisions(run)
    assert decided["edited"] is True
    rejected = [e for e in (await trace_of(handle)).events if e.kind == "input_rejected"]
    assert [(e.call_id, e.data["reason"]) for e in rejected] == [("calc-1", "already_decided")]


async def test_a_schema_failing_edited_approve_by_signal_leaves_its_refusal_in_the_trace(
    client: Client, task_queue: str
) -> None:
    run = await start(client, task_queue, calculate(), answer("Done."))
    await waiting(run)
    handle = client.get_workflow_handle(run.workflow_id)
    await handle.signal("approve", ApproveInput(call_id="calc-1", arguments={"expr": "2 + 3"}))
    await handle.signal("approve", ApproveInput(call_id="calc-1"))
    result = await run.result()
    assert tool_results(result)["calc-1"]["result"] == 42
    events = (await trace_of(handle)).events
    kinds = [
        (e.kind, e.data.get("reason")) for e in events if e.kind in ("input_rejected", "approval_decided")
    ]
    assert kinds == [("input_rejected", "invalid_arguments"), ("approval_decided", None)]
