"""A run streamed to followers past its poll-Update budget stays controllable by Update.

Each Workflow Stream poll by Update is one of the run's 2,000 Updates (Temporal refuses
any past them); before the budget, one follower used them all in about six minutes of
streaming and steer, approve and cancel were refused from then on. Now the run answers
`stream_poll_updates` polls by Update (1,000 by default; 3 here, so the test is short),
refuses the rest by name (`poll_budget_spent`), and `run_events` polls by query, which
adds no history. Real dev server, real worker, the product's own client.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from contracts import RunResult
from contracts.limits import DEFAULT_POLL_UPDATES
from contracts.stream import POLL_NAME, DeltaEvent, TraceItem
from testing import AgentTestEnvironment, scripted_agent, tool_call
from tests.helpers import turn, update_names, wait_until

BUDGET = 3
FIRST = "first words " * 30
SECOND = "second answer " * 200


async def test_past_its_poll_budget_a_streamed_run_still_approves_steers_and_cancels(
    agents: AgentTestEnvironment,
) -> None:
    config = scripted_agent(
        turn(
            FIRST,
            chunk_chars=6,
            chunk_delay_s=0.02,
            tool_calls=[tool_call("calculator", {"expression": "6*7"})],
        ),
        turn(SECOND, chunk_chars=6, chunk_delay_s=0.06),  # about 28 s: cancelled while it streams
        turn("never reached"),
        tools=["calculator"],
        approval_required=["calculator"],
        stream=True,
        stream_interval_s=0.05,
        stream_poll_updates=BUDGET,
    )
    run = await agents.runs.start("What is 6 * 7?", config)
    seen: list[DeltaEvent | TraceItem] = []

    async def follow() -> None:
        async for event in run.events(poll_cooldown_s=0.1):
            seen.append(event)

    follower = asyncio.create_task(follow())
    handle = agents.client.get_workflow_handle(run.workflow_id, result_type=RunResult)
    # Each query replays the whole run (no workflow cache): a loaded machine answers some late.
    state, _ = await wait_until(handle, lambda state, _trace: bool(state.pending_approvals), 60)
    [pending] = state.pending_approvals
    first_call = [e for e in seen if isinstance(e, DeltaEvent) and e.call == 0]
    assert len(first_call) > BUDGET  # more batches than the run answers polls by Update

    assert (await run.approve(pending.call_id)).status == "accepted"
    # Steered and cancelled while call 1 streams (the follower, polling by query now, may lag behind it:
    # each of its polls replays the whole run on a loaded machine).
    await wait_until(handle, lambda _s, trace: any(e.data.get("call") == 1 for e in trace.events), 60)
    steered = await run.steer("Keep it short.")
    assert steered.status == "queued", steered
    cancelled = await run.cancel("enough")
    assert cancelled.status == "accepted", cancelled
    result = await asyncio.wait_for(run.result(), 60)
    await asyncio.wait_for(follower, 30)

    assert result.status == "cancelled"
    names = await update_names(handle)
    assert names.count(POLL_NAME) == BUDGET
    assert {"approve", "steer", "cancel"} <= set(names)
    kinds = [e.event.kind for e in seen if isinstance(e, TraceItem)]
    assert kinds[-1] == "request_cancelled" and "llm_completed" in kinds


async def test_a_poll_past_the_budget_is_refused_by_name(agents: AgentTestEnvironment) -> None:
    config = scripted_agent(
        turn(SECOND, chunk_chars=6, chunk_delay_s=0.03), stream=True, stream_poll_updates=0
    )
    run = await agents.runs.start("Tell me.", config)
    handle = agents.client.get_workflow_handle(run.workflow_id)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(POLL_NAME, {"topics": [], "from_offset": 0})  # pyright: ignore[reportUnknownMemberType]
    assert (
        isinstance(refused.value.cause, ApplicationError) and refused.value.cause.type == "poll_budget_spent"
    )
    assert (await run.cancel()).status == "accepted"


def test_the_default_budget_leaves_half_the_updates_for_controls() -> None:
    assert DEFAULT_POLL_UPDATES == 1_000  # of Temporal's 2,000 Updates per run
    assert scripted_agent(turn("x")).stream_poll_updates == DEFAULT_POLL_UPDATES
