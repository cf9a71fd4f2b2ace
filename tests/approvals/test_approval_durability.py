"""Approval waits that outlast things: a worker restart, a session forwarding decisions, a cancel."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from temporalio.client import Client

from clients.runs import Runs
from clients.sessions import Sessions
from contracts import AgentConfig
from payloads.blob_store import BlobStore
from testing import answer, script_overrides
from tests.agent_tools import registry_for_tests
from tests.approvals.test_approval import agent, calculate, decisions, start, tool_results, waiting, waits
from tests.session_helpers import new_session_id
from worker import build_worker


async def test_a_waiting_call_survives_a_worker_restart(client: Client, store: BlobStore) -> None:
    queue = f"approval-restart-{uuid.uuid4().hex[:8]}"
    runs = Runs(client, task_queue=queue, store=store)
    async with build_worker(
        client, task_queue=queue, registry=registry_for_tests(), store=store, max_cached_workflows=0
    ):
        run = await runs.start("What is 6 * 7?", agent(calculate(), answer("It is 42.")))
        [before] = await waiting(run)
    # The worker is gone; a new one (a new process would do the same) picks the run up from history.
    restarted_at = datetime.now(UTC)
    async with build_worker(
        client, task_queue=queue, registry=registry_for_tests(), store=store, max_cached_workflows=0
    ):
        [after] = await waiting(run)
        assert waits([after]) == waits([before])
        assert after.requested_at < restarted_at  # the wait was kept, not begun again
        ack = await run.approve("calc-1", approver="after-restart")
        assert (ack.status, ack.call_id) == ("accepted", "calc-1")
        result = await run.result()
        found = await decisions(run)
    assert result.status == "completed" and result.answer == "It is 42."
    assert tool_results(result)["calc-1"]["result"] == 42
    assert [(d["call_id"], d["approver"]) for d in found] == [("calc-1", "after-restart")]


async def test_a_session_forwards_approve_to_its_active_run(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    config = AgentConfig(model="scripted", tools=["calculator"])
    accepted = await session.ask(
        "What is 6 * 7?",
        config=config,
        overrides={**script_overrides(calculate(), answer("42.")), "approval_required": ["calculator"]},
    )
    run = Runs(client, task_queue=task_queue).get(accepted.run_workflow_id)
    [pending] = await waiting(run)
    assert waits(await session.pending_approvals()) == waits([pending])
    assert (await session.status()).active_run_workflow_id == run.workflow_id
    unknown = await session.approve("no-such-call")
    assert (unknown.status, unknown.reason) == ("rejected", "unknown_call")  # the run's answer, forwarded
    ack = await session.approve("calc-1", approver="via-session")
    assert (ack.status, ack.call_id) == ("accepted", "calc-1")
    record = await session.await_result(accepted.request_id)
    assert record.status == "completed" and record.result == "42."
    assert [(d["call_id"], d["approver"]) for d in await decisions(run)] == [("calc-1", "via-session")]
    after = await session.approve("calc-1")
    assert (after.status, after.reason) == ("rejected", "idle")
    assert await session.pending_approvals() == []


async def test_a_cancel_while_a_call_waits_ends_the_call_cancelled(client: Client, task_queue: str) -> None:
    run = await start(client, task_queue, calculate(), answer("never"))
    await waiting(run)
    assert (await run.cancel("changed plans")).status == "accepted"
    result = await run.result()
    assert result.status == "cancelled"
    cancelled = tool_results(result)["calc-1"]  # the call has a result: no dangling call
    assert cancelled["ok"] is False and cancelled["error"]["type"] == "cancelled"
    assert await run.pending_approvals() == []
    late = await run.approve("calc-1")
    assert (late.status, late.reason) == ("rejected", "not_running")
