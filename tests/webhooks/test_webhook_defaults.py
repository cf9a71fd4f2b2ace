"""Where a request's webhooks go when its ask names none: the session's default, then the agent's.

On the real dev server and worker, delivered to real receivers on 127.0.0.1 that verify every
signature with `standardwebhooks`. The rule is `workflows.session.settings.webhook_for`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.service import RPCError

from activities.tools.agent_profiles import AgentProfiles
from client import RejectedError, Schedules, ScheduleView, Sessions
from testing import answer, scripted_agent
from tests.session_helpers import new_session_id
from tests.webhook_receiver import Receiver

REFUSED = "http://10.0.0.1/hook"  # a private address the tests' allow-list (127.0.0.1) refuses


@pytest_asyncio.fixture(loop_scope="session")
async def receivers() -> AsyncIterator[tuple[Receiver, Receiver, Receiver]]:
    """Three receivers: the agent's, the session's and an ask's own."""
    started = (Receiver(), Receiver(), Receiver())
    for receiver in started:
        await receiver.start()
    yield started
    for receiver in started:
        await receiver.stop()


async def test_an_ask_without_a_url_goes_to_the_sessions_default_then_the_agents_and_its_own_url_wins(
    client: Client, task_queue: str, receivers: tuple[Receiver, Receiver, Receiver]
) -> None:
    agents, sessions, own = receivers
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = scripted_agent(answer("ok"), webhook_url=agents.url)
    first = await session.ask_sync("One", config=agent, agent_id="hooked", session_webhook_url=sessions.url)
    second = await session.ask_sync("Two", webhook_url=own.url)
    silent = await session.ask_sync("Three", no_webhook=True)
    assert (await session.set_webhook(None)).status == "accepted"
    fourth = await session.ask_sync("Four")
    assert (await session.set_webhook(sessions.url)).status == "accepted"
    fifth = await session.ask_sync("Five")

    [to_session, again] = await sessions.wait_for(2)
    [to_own] = await own.wait_for(1)
    [to_agent] = await agents.wait_for(1)
    assert all(r.verified for r in (to_session, again, to_own, to_agent))
    assert [to_session.body["data"]["request_id"], again.body["data"]["request_id"]] == [
        first.request_id,
        fifth.request_id,
    ]
    assert to_own.body["data"]["request_id"] == second.request_id
    assert to_agent.body["data"]["request_id"] == fourth.request_id
    assert to_agent.body["data"]["agent"] == "hooked" and to_agent.body["type"] == "request.completed"
    records = {r.request_id: r.webhook_url for r in await session.requests()}
    assert records == {
        first.request_id: sessions.url,
        second.request_id: own.url,
        silent.request_id: None,
        fourth.request_id: agents.url,
        fifth.request_id: sessions.url,
    }
    with pytest.raises(RPCError):  # the third request started no delivery at all
        await client.get_workflow_handle(f"{session.workflow_id}-webhook-3").describe()
    status = await session.status()
    assert (status.webhook_url, status.config.webhook_url) == (sessions.url, agents.url)
    assert len(sessions.received) == 2 and len(own.received) == 1 and len(agents.received) == 1


async def test_the_sessions_default_is_carried_across_continue_as_new_and_into_a_fork(
    client: Client, task_queue: str, receivers: tuple[Receiver, Receiver, Receiver]
) -> None:
    _, sessions, _ = receivers
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync(
        "Start", config=scripted_agent(answer("ok")), session_webhook_url=sessions.url, no_webhook=True
    )
    handle = client.get_workflow_handle(session.workflow_id)
    first_run = (await handle.describe()).run_id
    for n in range(40):  # the tests' server suggests continuing as new after 120 events
        await session.ask_sync(f"Filler {n}", no_webhook=True)
        if (await handle.describe()).run_id != first_run:
            break
    assert (await handle.describe()).run_id != first_run, "the session never continued as new"
    after = await session.ask_sync("After")
    [got] = await sessions.wait_for(1)
    assert got.body["data"]["request_id"] == after.request_id and got.verified
    forked = Sessions(client, task_queue=task_queue).get((await session.fork()).session_id)
    assert (await forked.status()).webhook_url == sessions.url


async def test_a_refused_url_is_refused_by_name_wherever_it_is_set_and_changes_nothing(
    client: Client, task_queue: str, receivers: tuple[Receiver, Receiver, Receiver]
) -> None:
    _, sessions, _ = receivers
    agent = scripted_agent(answer("ok"))
    new = Sessions(client, task_queue=task_queue).get(new_session_id())
    for options, field in (
        ({"config": agent, "session_webhook_url": REFUSED}, "session_webhook_url:"),
        ({"config": scripted_agent(answer("ok"), webhook_url=REFUSED)}, "config.webhook_url:"),
        ({"config": agent, "webhook_url": sessions.url, "no_webhook": True}, "no_webhook"),
    ):
        with pytest.raises(RejectedError) as refused:
            await new.ask("x", **options)  # pyright: ignore[reportArgumentType]
        assert refused.value.code == "invalid_input" and field in refused.value.message
    with pytest.raises(RPCError):
        await client.get_workflow_handle(new.workflow_id).describe()  # nothing was created

    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("x", config=agent, session_webhook_url=sessions.url, no_webhook=True)
    ack = await session.set_webhook(REFUSED)
    assert (ack.status, ack.reason) == ("rejected", "invalid_input")
    assert ack.message is not None and ack.message.startswith("webhook_url:")
    assert (await session.status()).webhook_url == sessions.url  # unchanged

    schedules = Schedules(client, task_queue=task_queue)
    with pytest.raises(RejectedError, match=r"config\.webhook_url:"):
        await schedules.create(
            owner="hooks-defaults",
            agent_id="a",
            config=scripted_agent(answer("ok"), webhook_url=REFUSED),
            message="m",
            every_s=60,
            name="refused",
        )
    with pytest.raises(RejectedError) as missing:
        await schedules.describe("schedule/hooks-defaults/refused")
    assert missing.value.code == "not_found"

    profiles = AgentProfiles()
    with pytest.raises(ValueError, match=r"invalid_input: config\.webhook_url:"):
        profiles.register("hooked", scripted_agent(answer("ok"), webhook_url=REFUSED))
    assert "hooked" not in profiles
    await asyncio.sleep(0.5)
    assert sessions.received == []


async def test_a_firings_request_goes_to_the_schedules_url_over_the_sessions_and_else_to_the_sessions(
    client: Client, task_queue: str, receivers: tuple[Receiver, Receiver, Receiver]
) -> None:
    agents, sessions, scheduled = receivers
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = scripted_agent(answer("ok"), webhook_url=agents.url)
    await session.ask_sync("Start", config=agent, session_webhook_url=sessions.url, no_webhook=True)
    schedules, who = Schedules(client, task_queue=task_queue), f"hooks-{uuid.uuid4().hex[:8]}"

    async def create(name: str, webhook_url: str | None = None) -> ScheduleView:
        return await schedules.create(
            owner=who,
            agent_id="a",
            config=agent,
            message=name,
            name=name,
            every_s=3600,
            session_id=session.workflow_id,
            webhook_url=webhook_url,
        )

    with_url, without = await create("with", scheduled.url), await create("without")
    await schedules.trigger(with_url.schedule_id)
    got = await scheduled.wait_for(2)  # `schedule.fired`, then the request's end
    assert sorted(r.body["type"] for r in got) == ["request.completed", "schedule.fired"]
    await schedules.trigger(without.schedule_id)
    [to_session] = await sessions.wait_for(1)
    assert to_session.body["data"]["schedule_id"] == without.schedule_id and to_session.verified
    # The typed client names a thread and a schedule by their ids: so does the webhook.
    assert (
        to_session.body["data"]["thread_id"] == session.workflow_id == to_session.body["data"]["workflow_id"]
    )
    both, listed = [with_url.schedule_id, without.schedule_id], list[str]()
    for _ in range(50):  # the server filters by owner; its listing lags a moment behind
        listed = [v.schedule_id for v in await schedules.list(who)]
        if listed == both:
            break
        await asyncio.sleep(0.2)
    assert listed == both
    for view in (with_url, without):
        await schedules.delete(view.schedule_id)
    assert agents.received == []
