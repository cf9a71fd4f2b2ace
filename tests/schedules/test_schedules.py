"""Schedules on a real dev server (Temporal Schedules firing every second or two) and a real worker."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.testing import ActivityEnvironment

from activities.background.ask_for_schedule import ask_for_schedule
from client import MessageEntry, RejectedError, Schedules, ScheduleView, Sessions
from clients.schedule_spec import max_backfill
from contracts.schedules import FIRING_REF, FIRING_WORKFLOW_TYPE, SCHEDULE_REF, FiringAsk, FiringInput
from testing import answer, scripted_agent
from tests.session_helpers import new_session_id

T = TypeVar("T")


def owner() -> str:
    return f"owner-{uuid.uuid4().hex[:8]}"


async def eventually(
    read: Callable[[], Awaitable[T]], holds: Callable[[T], bool], timeout_s: float = 30
) -> T:
    """Read until `holds` (fails the test on timeout, showing the last value read)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    value = await read()
    while not holds(value):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached within {timeout_s}s; last: {value!r}")
        await asyncio.sleep(0.2)
        value = await read()
    return value


def finished(view: ScheduleView, count: int) -> bool:
    return sum(f.status != "running" for f in view.recent_firings) >= count


async def test_a_schedule_fires_into_its_session_and_is_paused_triggered_and_deleted(
    client: Client, task_queue: str
) -> None:
    schedules, sessions = Schedules(client, task_queue=task_queue), Sessions(client, task_queue=task_queue)
    session_id, who = new_session_id(), owner()
    view = await schedules.create(
        owner=who,
        agent_id="watcher",
        config=scripted_agent(answer("all quiet")),
        message="Check the queue.",
        every_s=1,
        session_id=session_id,
        name="queue-watch",
    )
    assert (view.schedule_id, view.overlap, view.session_id) == (
        f"schedule/{who}/queue-watch",
        "skip",
        session_id,
    )
    session = sessions.get(session_id)

    async def records() -> list[str]:
        try:
            return [r.refs.get(SCHEDULE_REF, "") for r in await session.requests()]
        except Exception:  # the first firing has not started the session yet
            return []

    await eventually(records, lambda ids: len(ids) >= 2)
    assert set(await records()) == {view.schedule_id}  # each firing's request names the schedule
    paused = await schedules.pause(view.schedule_id, note="maintenance")
    assert (paused.paused, paused.note) == (True, "maintenance")

    described = await eventually(lambda: schedules.describe(view.schedule_id), lambda v: finished(v, 2))
    done = [f for f in described.recent_firings if f.status != "running"]
    assert all(f.thread_id == session_id for f in done)
    kept = {r.request_id: r for r in await session.requests()}
    asked = [f for f in done if f.status == "asked"]
    assert asked and all(f.request_id in kept for f in asked)
    assert all(kept[f.request_id or ""].refs[FIRING_REF] == f.firing_id for f in asked)
    first = kept[asked[0].request_id or ""]
    assert first.status == "completed" or (await session.await_result(first.request_id)).status == "completed"
    user_messages = [
        e
        for e in [e async for e in session.thread()]
        if isinstance(e, MessageEntry) and e.payload.role == "user"
    ]
    assert user_messages and all(e.refs.get(SCHEDULE_REF) == view.schedule_id for e in user_messages)

    # Paused: the count of firings stays put until a trigger fires once more.
    settled = (await schedules.describe(view.schedule_id)).firings
    await asyncio.sleep(2.5)
    assert (await schedules.describe(view.schedule_id)).firings == settled
    await schedules.trigger(view.schedule_id)
    await eventually(lambda: schedules.describe(view.schedule_id), lambda v: v.firings == settled + 1)

    listed = await eventually(lambda: schedules.list(who), lambda views: len(views) == 1)
    assert listed[0].schedule_id == view.schedule_id and listed[0].paused
    assert await schedules.list(owner()) == []
    await schedules.delete(view.schedule_id)
    with pytest.raises(RejectedError) as gone:
        await schedules.describe(view.schedule_id)
    assert gone.value.code == "not_found"


async def test_allow_all_fires_a_fresh_session_each_time(client: Client, task_queue: str) -> None:
    schedules, sessions = Schedules(client, task_queue=task_queue), Sessions(client, task_queue=task_queue)
    view = await schedules.create(
        owner=owner(),
        agent_id="digest",
        config=scripted_agent(answer("digest")),
        message="Digest.",
        every_s=1,
    )
    assert (view.overlap, view.session_id, view.fresh_session_prefix) == (
        "allow_all",
        None,
        f"{view.schedule_id}/",
    )
    try:
        described = await eventually(lambda: schedules.describe(view.schedule_id), lambda v: finished(v, 2))
    finally:
        await schedules.delete(view.schedule_id)
    done = [f for f in described.recent_firings if f.status != "running"]
    threads = [f.thread_id or "" for f in done]
    assert len(set(threads)) == len(threads) and all(t.startswith(view.fresh_session_prefix) for t in threads)
    result = await sessions.get(threads[0]).await_result(done[0].request_id or "")
    assert (result.status, result.result, result.refs[SCHEDULE_REF]) == (
        "completed",
        "digest",
        view.schedule_id,
    )


@pytest.mark.parametrize(
    ("overlap", "status", "disposition", "busy_ends"),
    [
        ("skip", "skipped", None, "completed"),
        ("buffer_one", "asked", "enqueued", "completed"),
        ("cancel_other", "asked", "interrupted", "cancelled"),
    ],
)
async def test_each_overlap_policy_is_the_sessions_busy_answer(
    client: Client, task_queue: str, overlap: str, status: str, disposition: str | None, busy_ends: str
) -> None:
    schedules, sessions = Schedules(client, task_queue=task_queue), Sessions(client, task_queue=task_queue)
    session = sessions.get(new_session_id())
    busy = await session.ask("A long job.", config=scripted_agent(answer("long", delay_s=8)))
    view = await schedules.create(
        owner=owner(),
        agent_id="a",
        config=scripted_agent(answer("scheduled")),
        message="Tick.",
        every_s=3600,
        paused=True,
        note="triggered by hand",
        session_id=session.workflow_id,
        overlap=overlap,  # pyright: ignore[reportArgumentType]
    )
    try:
        await schedules.trigger(view.schedule_id)
        described = await eventually(lambda: schedules.describe(view.schedule_id), lambda v: finished(v, 1))
    finally:
        await schedules.delete(view.schedule_id)
    [firing] = described.recent_firings
    assert (firing.status, firing.thread_id) == (status, session.workflow_id)
    assert (await session.await_result(busy.request_id)).status == busy_ends
    if status == "asked":
        record = await session.request(firing.request_id or "")
        assert record.refs[SCHEDULE_REF] == view.schedule_id
        assert (await session.await_result(record.request_id)).status == "completed"
    else:
        assert firing.request_id is None and len(await session.requests()) == 1
    accepted = {r.request_id for r in await session.requests()} - {busy.request_id}
    assert len(accepted) == (1 if status == "asked" else 0)
    _ = disposition


async def test_backfill_fires_once_per_past_match(client: Client, task_queue: str) -> None:
    schedules = Schedules(client, task_queue=task_queue)
    view = await schedules.create(
        owner=owner(),
        agent_id="b",
        config=scripted_agent(answer("late")),
        message="Catch up.",
        cron="0 * * * *",
    )
    now = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)
    try:
        await schedules.backfill(view.schedule_id, now - timedelta(hours=3), now)
        described = await eventually(lambda: schedules.describe(view.schedule_id), lambda v: finished(v, 3))
        with pytest.raises(RejectedError, match="end_at"):
            await schedules.backfill(view.schedule_id, now, now - timedelta(hours=1))
    finally:
        await schedules.delete(view.schedule_id)
    hours = sorted(f.scheduled_at for f in described.recent_firings)
    assert [h.minute for h in hours] == [0, 0, 0] and len({h.hour for h in hours}) == 3
    assert all(f.status == "asked" for f in described.recent_firings)


async def test_a_backfill_past_its_bound_is_refused_by_name_and_fires_nothing(
    client: Client, task_queue: str
) -> None:
    schedules = Schedules(client, task_queue=task_queue)
    view = await schedules.create(
        owner=owner(),
        agent_id="b",
        config=scripted_agent(answer("late")),
        message="Catch up.",
        cron="* * * * *",
        paused=True,
    )
    now = datetime.now(UTC).replace(second=30, microsecond=0)
    try:
        for hours, matched in ((3, "180 firings"), (24 * 365, "over 999 firings")):
            with pytest.raises(RejectedError) as refused:
                await schedules.backfill(view.schedule_id, now - timedelta(hours=hours), now)
            assert refused.value.code == "invalid_input"
            assert matched in refused.value.message and "at most 100 (REACT_SCHEDULE_MAX_BACKFILL)" in str(
                refused.value
            )
        await asyncio.sleep(1)
        described = await schedules.describe(view.schedule_id)
        assert described.firings == 0 and described.recent_firings == []
        query = f"WorkflowType = '{FIRING_WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '{view.schedule_id}'"
        assert (await client.count_workflows(query)).count == 0
    finally:
        await schedules.delete(view.schedule_id)
    assert max_backfill({}) == 100 and max_backfill({"REACT_SCHEDULE_MAX_BACKFILL": "7"}) == 7
    with pytest.raises(RejectedError, match="REACT_SCHEDULE_MAX_BACKFILL"):
        max_backfill({"REACT_SCHEDULE_MAX_BACKFILL": "5000"})


async def test_bad_schedules_are_refused_by_name_and_create_nothing(client: Client, task_queue: str) -> None:
    schedules, who = Schedules(client, task_queue=task_queue), owner()
    agent = scripted_agent(answer("x"))
    bad: list[tuple[dict[str, object], str]] = [
        ({"cron": "not a cron"}, "cron:"),
        ({"cron": "@hourly", "timezone": "Nowhere/Land"}, "timezone:"),
        ({"every_s": 0}, "every_s:"),
        ({"every_s": 60, "session_id": "agent-x", "overlap": "allow_all"}, "overlap:"),
        ({"every_s": 60, "overlap": "skip"}, "overlap:"),
        ({"every_s": 60, "name": "no/slash"}, "name must"),
        ({"every_s": 60, "message": "   "}, "message:"),
    ]
    for fields, named in bad:
        arguments: dict[str, object] = {"message": "m", **fields}
        with pytest.raises(RejectedError) as refused:
            await schedules.create(owner=who, agent_id="a", config=agent, **arguments)  # pyright: ignore[reportArgumentType]
        assert refused.value.code == "invalid_input" and named in refused.value.message, fields
    made = await schedules.create(
        owner=who, agent_id="a", config=agent, message="m", every_s=60, name="n", paused=True
    )
    with pytest.raises(RejectedError, match="exists already"):
        await schedules.create(owner=who, agent_id="a", config=agent, message="m", every_s=60, name="n")
    listed = await eventually(lambda: schedules.list(who), lambda views: len(views) >= 1)
    assert [v.schedule_id for v in listed] == [made.schedule_id]
    await schedules.delete(made.schedule_id)
    for call in (schedules.describe, schedules.trigger, schedules.delete, schedules.pause):
        with pytest.raises(RejectedError) as missing:
            await call(made.schedule_id)
        assert missing.value.code == "not_found"


async def test_a_schedule_this_client_did_not_create_is_not_found(client: Client, task_queue: str) -> None:
    schedules, who = Schedules(client, task_queue=task_queue), owner()
    foreign = f"schedule/{who}/foreign"
    action = ScheduleActionStartWorkflow("SomeoneElses", id="someone-elses", task_queue=task_queue)
    spec = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))])
    handle = await client.create_schedule(
        foreign, Schedule(action=action, spec=spec, state=ScheduleState(paused=True))
    )
    try:
        with pytest.raises(RejectedError) as refused:
            await schedules.describe(foreign)
        assert refused.value.code == "not_found"
        assert await schedules.list(who) == []
    finally:
        await handle.delete()


async def test_a_retried_firing_asks_once(client: Client, task_queue: str) -> None:
    # A worker killed after the ask reached the session retries the activity: the same request id
    # is answered with the original request, so the session records one request, never two.
    environment = ActivityEnvironment(client=client)
    environment.info = dataclasses.replace(environment.info, task_queue=task_queue)
    session_id = new_session_id()
    firing = FiringInput(
        schedule_id="schedule/o/retried", agent_id="a", query="Once.", config=scripted_agent(answer("ok"))
    )
    ask = FiringAsk(
        firing=firing, session_id=session_id, firing_id="schedule/o/retried/firing-2030-01-01T00:00:00Z"
    )
    first = await environment.run(ask_for_schedule, ask)
    again = await environment.run(ask_for_schedule, ask)
    assert (first.status, again.request_id) == ("asked", first.request_id)
    assert first.request_id == "schedule.o.retried.firing-2030-01-01T00:00:00Z"
    records = await Sessions(client, task_queue=task_queue).get(session_id).requests()
    assert [r.request_id for r in records] == [first.request_id]
