"""Human approval of tool calls through the typed client: approve, deny, edit, time out, refusals.

A run of the scripted model calls `calculator`, which its config lists in
`approval_required`; the call waits until the test decides it with `RunHandle.approve`
(the `approve` Update) or the signal of the same name.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from clients.runs import RunHandle, Runs
from clients.update_retry import execute_update
from contracts import Ack, AgentConfig, RunResult, ScriptTurn
from contracts.approval import ApproveInput, PendingApproval
from conversation import MessageEntry
from testing import answer, call_tools, scripted_agent, tool_call
from tests.helpers import llm_inputs, state_of, trace_of

QUESTION = "What is 6 * 7?"


def agent(*turns: ScriptTurn, **config: Any) -> AgentConfig:
    """The scripted agent: calculator calls wait for approval; slow and echo do not."""
    return scripted_agent(
        *turns, tools=["calculator", "slow", "echo"], **{"approval_required": ["calculator"], **config}
    )


def calculate(expression: str = "6 * 7", call_id: str = "calc-1") -> ScriptTurn:
    return call_tools(tool_call("calculator", {"expression": expression}, call_id=call_id))


async def start(client: Client, task_queue: str, *turns: ScriptTurn, **config: Any) -> RunHandle:
    return await Runs(client, task_queue=task_queue).start(QUESTION, agent(*turns, **config))


async def waiting(run: RunHandle, count: int = 1, timeout_s: float = 60) -> list[PendingApproval]:
    """The run's waiting calls once `count` wait and the run has recorded it (a loaded machine allowed for).

    A query replays the run's whole history (no workflow cache), the LLM call's result included
    even while the workflow task that handles it is still to run; signals that arrive before that
    task are handled before the result in it (the SDK runs signal handlers first), so an approve
    sent on the query's word alone can find no call waiting. Waiting until no workflow task is
    pending makes the decision land after the run has recorded the wait.
    """
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            pending = await run.pending_approvals()
        except RPCError as error:  # a session's run that has not started yet
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            pending = []
        if len(pending) >= count and not await _task_pending(run):
            return pending
        assert asyncio.get_running_loop().time() < deadline, f"no call awaits approval: {pending}"
        await asyncio.sleep(0.1)


def waits(pending: list[PendingApproval]) -> list[tuple[str, str, str, str]]:
    """What identifies the waiting calls (a query answered mid-task may show other times, not other calls)."""
    return [(p.call_id, p.name, p.arguments, p.on_timeout) for p in pending]


def tool_results(result: RunResult) -> dict[str, Any]:
    """The tool results the model got, by call id, decoded."""
    return {
        e.payload.tool_call_id or "": json.loads(e.payload.content)
        for e in result.entries
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    }


async def decisions(run: RunHandle) -> list[dict[str, Any]]:
    """The `approval_decided` events of the run's trace: call id and data."""
    events = (await run.trace()).events
    return [{"call_id": e.call_id, **e.data} for e in events if e.kind == "approval_decided"]


async def test_an_approved_call_runs_and_the_run_answers(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("It is 42."))
    [pending] = await waiting(run)
    assert pending.call_id == "calc-1" and pending.name == "calculator"
    assert (
        json.loads(pending.arguments) == {"expression": "6 * 7"} and pending.deadline > pending.requested_at
    )
    state = await run.state()
    assert [(c.id, c.status) for c in state.pending_tool_calls] == [("calc-1", "awaiting_approval")]
    requested = [e for e in (await run.trace()).events if e.kind == "approval_requested"]
    assert [(e.call_id, e.data["name"]) for e in requested] == [("calc-1", "calculator")]
    assert "6 * 7" in str(requested[0].data["arguments"]) and requested[0].data["deadline"]

    ack = await run.approve("calc-1", approver="alice")
    assert (ack.status, ack.call_id) == ("accepted", "calc-1")
    result = await run.result()
    assert result.status == "completed" and result.answer == "It is 42."
    assert tool_results(result)["calc-1"]["result"] == 42
    [decided] = await decisions(run)
    assert decided["verdict"] == "approved" and decided["approver"] == "alice" and not decided["edited"]
    assert await run.pending_approvals() == []


async def test_a_denied_call_tells_the_model_who_denied_it_and_why(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("Understood."))
    await waiting(run)
    ack = await run.deny("calc-1", "not with production data", approver="bob")
    assert (ack.status, ack.call_id) == ("accepted", "calc-1")
    result = await run.result()
    assert result.status == "completed" and result.answer == "Understood."
    denied = tool_results(result)["calc-1"]
    assert denied["ok"] is False and denied["error"]["type"] == "denied"
    assert "bob" in denied["error"]["message"] and "not with production data" in denied["error"]["message"]
    assert "result" not in denied  # the tool never ran
    second_call = json.dumps((await llm_inputs(client.get_workflow_handle(run.workflow_id)))[1])
    assert "not with production data" in second_call  # the next LLM call reads the denial
    [decided] = await decisions(run)
    assert (decided["verdict"], decided["approver"]) == ("denied", "bob")
    assert "not with production data" in decided["reason"]


async def test_edited_arguments_run_the_tool_with_them(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("Done."))
    await waiting(run)
    ack = await run.approve("calc-1", arguments={"expression": "2 + 3"}, approver="carol")
    assert ack.status == "accepted"
    result = await run.result()
    edited = tool_results(result)["calc-1"]
    assert edited["ok"] is True and edited["result"] == 5  # not 42: the edited arguments ran
    assert "edited" in edited["note"] and "2 + 3" in edited["note"]
    [decided] = await decisions(run)
    assert decided["edited"] is True and decided["verdict"] == "approved"


async def test_edited_arguments_that_fail_the_schema_are_refused_by_name(
    client: Client, task_queue: str
) -> None:
    run = await start(client, task_queue, calculate(), answer("Done."))
    [before] = await waiting(run)
    missing = await run.approve("calc-1", arguments={"expr": "1 + 1"})
    assert (missing.status, missing.reason) == ("rejected", "invalid_arguments")
    assert "expression" in (missing.message or "")
    mistyped = await run.approve("calc-1", arguments={"expression": 12})
    assert (mistyped.status, mistyped.reason) == ("rejected", "invalid_arguments")
    assert "expression" in (mistyped.message or "")
    # Nothing changed: the call still waits, undecided, with its deadline.
    assert waits(await run.pending_approvals()) == waits([before])
    assert await decisions(run) == []
    assert (await run.approve("calc-1", arguments={"expression": "10 - 3"})).status == "accepted"
    result = await run.result()
    assert result.status == "completed" and tool_results(result)["calc-1"]["result"] == 7


async def test_a_call_nobody_decides_times_out_as_a_denial(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("Nobody answered."), approval_timeout_s=1)
    result = await run.result()
    assert result.status == "completed" and result.answer == "Nobody answered."
    timed_out = tool_results(result)["calc-1"]
    assert timed_out["ok"] is False and timed_out["error"]["type"] == "approval_timeout"
    [decided] = await decisions(run)
    assert decided["verdict"] == "timed_out"
    late = await run.approve("calc-1")
    assert (late.status, late.reason) == ("rejected", "not_running")


async def test_bad_decisions_are_refused_by_name_and_change_nothing(client: Client, task_queue: str) -> None:
    both = call_tools(
        tool_call("calculator", {"expression": "6 * 7"}, call_id="calc-1"),
        tool_call("slow", {"seconds": 4, "label": "free"}, call_id="slow-1"),
    )
    run = await start(client, task_queue, both, answer("Both done."))
    [before] = await waiting(run)
    unknown = await run.approve("no-such-call")
    assert (unknown.status, unknown.reason) == ("rejected", "unknown_call")
    free = await run.approve("slow-1")
    assert (free.status, free.reason) == ("rejected", "approval_not_required")
    # Edited arguments while denying: refused by the client before sending...
    edit_denial = await run.approve("calc-1", approved=False, arguments={"expression": "1"})
    assert (edit_denial.status, edit_denial.reason) == ("rejected", "invalid_input")
    # ...and by the workflow's validator when another client sends it anyway.
    handle = client.get_workflow_handle(run.workflow_id)
    raw = {"call_id": "calc-1", "approved": False, "arguments": {"expression": "1"}}
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await execute_update(handle, "approve", raw, Ack)
    assert isinstance(refused.value.cause, ApplicationError) and refused.value.cause.type == "invalid_input"
    assert waits(await run.pending_approvals()) == waits([before]) and await decisions(run) == []

    assert (await run.approve("calc-1", approver="dana")).status == "accepted"
    twice = await run.approve("calc-1", approved=False, reason="changed my mind")
    assert (twice.status, twice.reason) == ("rejected", "already_decided")
    result = await run.result()
    assert result.status == "completed"
    results = tool_results(result)
    assert results["calc-1"]["result"] == 42 and results["slow-1"]["result"].startswith("slept 4")
    assert [(d["call_id"], d["verdict"]) for d in await decisions(run)] == [("calc-1", "approved")]


async def test_the_approve_signal_decides_a_call_too(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("Signalled."))
    await waiting(run)
    handle = client.get_workflow_handle(run.workflow_id)
    await handle.signal("approve", ApproveInput(call_id="no-such-call", approver="erin"))
    await handle.signal(
        "approve", ApproveInput(call_id="calc-1", approved=False, reason="no", approver="erin")
    )
    result = await run.result()
    assert result.status == "completed" and result.answer == "Signalled."
    assert tool_results(result)["calc-1"]["error"]["type"] == "denied"
    assert [(d["call_id"], d["approver"]) for d in await decisions(run)] == [("calc-1", "erin")]
    assert (await state_of(handle)).pending_approvals == []
    kinds = [e.kind for e in (await trace_of(handle)).events]
    assert kinds.count("approval_decided") == 1


async def _task_pending(run: RunHandle) -> bool:
    """Whether the run has a workflow task scheduled or running (events it has not handled yet)."""
    described = await run._handle.describe()  # pyright: ignore[reportPrivateUsage]
    return described.raw_description.HasField("pending_workflow_task")
