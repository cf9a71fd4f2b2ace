"""Controls racing a run's end (issue 8, defects 1, 4 and 5).

* Steer, inject and cancel reaching a session as its run finishes (signals and Updates, many
  sessions at once): every session stays healthy, every Update answers the run's own `Ack`
  or `rejected` (`idle`, `not_running`, `sealed`), and the next ask continues the same
  conversation.
* A cancel the run acks `accepted` always ends it `cancelled`; a rejected one says the run
  had already finished (cancels raced against LLM and tool completions, many times).
* A session never acks `queued` for input its run then rejects (queue full, oversized,
  sealed): every `queued` input is in the thread afterwards.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from client import Runs
from clients import sessions
from contracts import Ack, CancelInput, RunResult, SteerInput
from contracts.limits import MAX_QUEUED_INPUTS
from payloads.blob_store import BlobStore
from tests.helpers import (
    call,
    message_payloads,
    start_run,
    started_llm_calls,
    turn,
    wait_until,
    workflow_task_failures,
)
from tests.llm_gate import answer_llm_call, held
from tests.session_helpers import ask, new_session_id, session_thread

SESSIONS = 16
CONTROLS_PER_SESSION = 12
RUNS = 48
SAFETY_NET_S = 300
"""How long a test waits for a run's end before it fails: a safety net, never what a test measures."""


async def task_failures(client: Client, workflow_id: str) -> list[str]:
    return await workflow_task_failures(client.get_workflow_handle(workflow_id))


def input_ids(entries: list[Any]) -> set[str]:
    return {entry.refs["input_id"] for entry in entries if "input_id" in entry.refs}


async def send(handle: WorkflowHandle[Any, Any], name: str, as_update: bool, n: int) -> Ack | None:
    """One control: steer or inject input (`n` makes it unique) or a cancel, as an Update or a signal."""
    payload = CancelInput(reason=f"race {n}") if name == "cancel" else SteerInput(content=f"{name} {n}")
    if not as_update:
        await handle.signal(name, payload)
        return None
    ack: Ack = await sessions.update(handle, name, payload, Ack)
    return ack


async def race_one_session(client: Client, task_queue: str, seed: int) -> None:
    rng = random.Random(seed)
    plan = [
        (rng.choice(["steer", "inject", "cancel"]), rng.random() < 0.6) for _ in range(CONTROLS_PER_SESSION)
    ]
    session_id = new_session_id()
    handle = client.get_workflow_handle(session_id)
    delay_s = 0.3 + 0.05 * (seed % 4)
    # Each drained steer costs the run one more model call: enough turns for every control.
    script = [turn("the answer", delay_s=delay_s) for _ in range(CONTROLS_PER_SESSION + 1)]
    first = await ask(client, task_queue, session_id, "first", *script)

    async def control(n: int, name: str, as_update: bool) -> tuple[str, Ack | None]:
        await asyncio.sleep(0.1 * n)  # spread over the run's end
        return name, await send(handle, name, as_update, n)

    answers = await asyncio.gather(*(control(n, name, as_update) for n, (name, as_update) in enumerate(plan)))
    record = await asyncio.wait_for(
        sessions.await_result(client, session_id, first.request_id), timeout=SAFETY_NET_S
    )
    assert record.status in ("completed", "cancelled"), record
    thread_inputs = input_ids(await session_thread(handle))
    for name, ack in answers:
        if ack is None:
            continue
        if ack.status == "rejected":
            allowed = {"idle", "not_running"} if name == "cancel" else {"idle", "sealed"}
            assert ack.reason in allowed, f"{session_id}: {name} answered {ack}"
        elif name == "cancel":
            assert ack.status == "accepted" and record.status == "cancelled", f"{session_id}: {ack}, {record}"
        else:
            assert ack.status == "queued" and ack.input_id, f"{session_id}: {name} answered {ack}"
            dropped = record.status == "cancelled"  # queued input a cancelled run had not drained yet
            assert ack.input_id in thread_inputs or dropped, f"{session_id}: queued {ack.input_id} was lost"
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING, f"{session_id} is {description.status}"
    second = await ask(client, task_queue, session_id, "second", turn("again"))
    record = await asyncio.wait_for(
        sessions.await_result(client, session_id, second.request_id), timeout=SAFETY_NET_S
    )
    assert record.status == "completed" and record.result == "again"
    users = [p.content for p in message_payloads(await session_thread(handle)) if p.role == "user"]
    assert users[0] == "first" and users[-1] == "second", f"{session_id} started a new conversation: {users}"
    for workflow_id in (session_id, first.run_workflow_id, second.run_workflow_id):
        assert not await task_failures(client, workflow_id)


async def test_controls_racing_the_end_of_a_run_keep_every_session_healthy(
    client: Client, task_queue: str
) -> None:
    await asyncio.gather(*(race_one_session(client, task_queue, seed) for seed in range(SESSIONS)))


async def test_an_accepted_cancel_always_ends_the_run_cancelled(client: Client, task_queue: str) -> None:
    script = [
        turn(tool_calls=[call("echo", {"text": "x"})], delay_s=0.2),
        turn(tool_calls=[call("slow", {"seconds": 0.2})], delay_s=0.1),
        turn("final", delay_s=0.2),
    ]

    async def cancel_at(offset_s: float) -> tuple[Ack, RunResult]:
        handle = await start_run(client, task_queue, script, tools=["echo", "slow"])
        await asyncio.sleep(offset_s)
        ack = await Runs(client, task_queue=task_queue).get(handle.id).cancel("race")
        return ack, await asyncio.wait_for(handle.result(), timeout=SAFETY_NET_S)

    offsets = [0.1 + 4.0 * k / RUNS for k in range(RUNS)]  # from the first LLM call to after the run's end
    outcomes = await asyncio.gather(*(cancel_at(offset) for offset in offsets))
    for ack, result in outcomes:
        if ack.status == "accepted":
            assert result.status == "cancelled", (
                f"an accepted cancel was lost: {result.status}, {result.result}"
            )
        else:
            assert ack.status == "rejected" and ack.reason == "not_running", ack
            assert "already finished" in (ack.message or "") and result.status == "completed", (
                ack,
                result.status,
            )
    accepted = sum(ack.status == "accepted" for ack, _ in outcomes)
    print(
        f"\ncancel races: {accepted} accepted (all ended cancelled),",
        f"{RUNS - accepted} rejected (already finished)",
    )


async def test_a_session_never_acks_queued_for_input_the_run_rejects(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    session_id = new_session_id()
    handle = client.get_workflow_handle(session_id)
    # The draft call is held until the steers below are done: the window cannot close early.
    accepted = await ask(client, task_queue, session_id, "fill the queue", held(), *[turn("final")] * 4)
    run = client.get_workflow_handle(accepted.run_workflow_id, result_type=RunResult)
    await wait_until(run, lambda _s, trace: started_llm_calls(trace) == 1, timeout_s=SAFETY_NET_S)
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update("steer", {"content": "x" * 100_001})  # pyright: ignore[reportUnknownMemberType]
    assert isinstance(failed.value.cause, ApplicationError) and failed.value.cause.type == "payload_too_large"
    # Fill the run's queue to two places from its limit directly (signals are cheap), then steer
    # through the session: two are `queued`, the rest get the run's own `queue_full`.
    run_steers = [
        SteerInput(content=f"direct {n}", input_id=f"direct-{n}") for n in range(MAX_QUEUED_INPUTS - 2)
    ]
    for steer in run_steers:
        await run.signal("steer", steer)
    await wait_until(
        run, lambda state, _t: state.queued_inputs == MAX_QUEUED_INPUTS - 2, timeout_s=SAFETY_NET_S
    )
    acks = [await sessions.update(handle, "steer", SteerInput(content=f"steer {n}"), Ack) for n in range(5)]
    queued = {ack.input_id for ack in acks if ack.status == "queued"}
    reasons = Counter(ack.reason for ack in acks if ack.status != "queued")
    assert len(queued) == 2 and reasons == {"queue_full": 3}, acks
    queued |= {steer.input_id for steer in run_steers if steer.input_id}
    await answer_llm_call(client, store, run.id, "draft")
    record = await asyncio.wait_for(
        sessions.await_result(client, session_id, accepted.request_id), timeout=SAFETY_NET_S
    )
    assert record.status == "completed"
    assert input_ids(await session_thread(handle)) == queued

    # Steer a run that keeps finishing: input reaching it after it sealed must not be acked `queued`.
    answers = [turn(f"answer {n}", delay_s=0.05) for n in range(60)]
    accepted = await ask(client, task_queue, session_id, "keep going", *answers)
    acks: list[Ack] = []
    for n in range(30):
        acks.append(await sessions.update(handle, "steer", SteerInput(content=f"more {n}"), Ack))
        await asyncio.sleep(0.05)
    record = await asyncio.wait_for(
        sessions.await_result(client, session_id, accepted.request_id), timeout=SAFETY_NET_S
    )
    assert record.status == "completed", record
    late = [ack for ack in acks if ack.status != "queued"]
    assert all(ack.reason in ("sealed", "idle") for ack in late), late
    thread_inputs = input_ids(await session_thread(handle))
    assert {ack.input_id for ack in acks if ack.status == "queued"} <= thread_inputs, (
        "a queued steer was lost"
    )
    assert not await task_failures(client, session_id)
