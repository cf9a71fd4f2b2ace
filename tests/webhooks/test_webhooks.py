"""Webhooks on a real dev server and worker, delivered to a real HTTP receiver that verifies signatures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pydantic import JsonValue
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from client import RejectedError, Schedules, Sessions
from contracts.webhooks import MAX_WEBHOOK_ANSWER_CHARS, WebhookOutcome
from testing import answer, call_tools, scripted_agent, tool_call
from tests.helpers import spawn_worker
from tests.session_helpers import new_session_id
from tests.webhook_receiver import Receiver


@pytest_asyncio.fixture(loop_scope="session")
async def receiver() -> AsyncIterator[Receiver]:
    receiving = Receiver()
    await receiving.start()
    yield receiving
    await receiving.stop()


async def delivery_outcome(client: Client, delivery_id: str, timeout_s: float = 60) -> WebhookOutcome:
    """The delivery's outcome once it has ended (the session starts it just after the request's end)."""
    handle = client.get_workflow_handle(delivery_id, result_type=WebhookOutcome)

    async def ended() -> WebhookOutcome:
        while True:
            try:
                return await handle.result()
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
            await asyncio.sleep(0.1)

    return await asyncio.wait_for(ended(), timeout_s)


async def test_a_finished_request_is_delivered_signed_with_its_answer(
    client: Client, task_queue: str, receiver: Receiver
) -> None:
    sessions = Sessions(client, task_queue=task_queue)
    session = sessions.get(new_session_id())
    long_answer = "x" * (MAX_WEBHOOK_ANSWER_CHARS + 10)
    agent = scripted_agent(answer("42"))
    first = await session.ask_sync("The answer?", config=agent, agent_id="oracle", webhook_url=receiver.url)
    second = await session.ask_sync(
        "Long?", webhook_url=receiver.url, overrides={"script": [{"content": long_answer}]}
    )
    [one, two] = await receiver.wait_for(2)
    assert one.verified and two.verified  # Standard Webhooks signatures, checked by the package
    assert one.body["type"] == "request.completed"
    assert one.body["data"] == {
        "agent": "oracle",
        "thread_id": session.workflow_id,  # the typed client's name of the thread: its id
        "workflow_id": session.workflow_id,
        "request_id": first.request_id,
        "status": "completed",
        "answer": "42",
        "answer_truncated": False,
    }
    assert two.body["data"]["request_id"] == second.request_id and two.body["data"]["answer_truncated"]
    assert len(two.body["data"]["answer"]) == MAX_WEBHOOK_ANSWER_CHARS
    assert one.webhook_id == f"{session.workflow_id}-webhook-1" != two.webhook_id
    assert (await delivery_outcome(client, one.webhook_id)).delivered
    records = {r.request_id: r for r in await session.requests()}
    assert records[first.request_id].webhook_url == receiver.url


async def test_a_failed_and_a_cancelled_request_are_delivered(
    client: Client, task_queue: str, receiver: Receiver
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    slow = scripted_agent(answer("never", delay_s=30))
    accepted = await session.ask("Slow.", config=slow, webhook_url=receiver.url)
    await asyncio.sleep(0.5)
    await session.cancel(reason="no longer needed")
    failing: dict[str, JsonValue] = {"script": []}  # the scripted model has nothing to say: the run fails
    await session.ask("Fail.", webhook_url=receiver.url, overrides=failing, on_busy="enqueue")
    got = await receiver.wait_for(2)
    kinds = {r.body["data"]["request_id"]: r.body["type"] for r in got}
    assert kinds[accepted.request_id] == "request.cancelled"
    assert sorted(kinds.values()) == ["request.cancelled", "request.failed"]
    failed = next(r for r in got if r.body["type"] == "request.failed")
    assert failed.body["data"]["status"] == "failed" and failed.body["data"]["error"]


async def test_a_receiver_down_for_a_while_gets_it_once_up_and_one_that_stays_down_is_given_up(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    later = Receiver()  # not listening yet: connection refused
    result = await session.ask_sync("Hi", config=scripted_agent(answer("hello")), webhook_url=later.url)
    await asyncio.sleep(2.5)
    await later.start()
    try:
        [got] = await later.wait_for(1)
    finally:
        await later.stop()
    assert got.verified and got.body["data"]["request_id"] == result.request_id
    outcome = await delivery_outcome(client, got.webhook_id)
    assert outcome.delivered and outcome.attempts >= 2

    monkeypatch.setenv("REACT_WEBHOOK_GIVE_UP_S", "2")
    failing = Receiver(mode="fail")
    await failing.start()
    try:
        await session.ask_sync("Again", webhook_url=failing.url, overrides={"script": [{"content": "x"}]})
        outcome = await delivery_outcome(client, f"{session.workflow_id}-webhook-2")
    finally:
        await failing.stop()
    assert not outcome.delivered and outcome.reason is not None and outcome.reason.startswith("gave up after")
    assert "503" in outcome.reason and len(failing.received) == outcome.attempts >= 2
    assert len({r.webhook_id for r in failing.received}) == 1  # the same id on every attempt


async def test_destinations_outside_the_allow_list_are_refused_by_name(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = scripted_agent(answer("x"))
    for url in (
        "http://10.1.2.3/hook",
        "http://192.168.0.1/",
        "http://[::1]/",
        "ftp://127.0.0.1/",
        "http://u:p@127.0.0.1/",
    ):
        with pytest.raises(RejectedError) as refused:
            await session.ask("x", config=agent, webhook_url=url)
        assert refused.value.code == "invalid_input" and "webhook_url:" in refused.value.message, url
    with pytest.raises(RejectedError, match="webhook_url"):
        await Schedules(client, task_queue=task_queue).create(
            owner="hooks",
            agent_id="a",
            config=agent,
            message="m",
            every_s=60,
            webhook_url="http://169.254.169.254/",
        )
    with pytest.raises(RPCError):
        await client.get_workflow_handle(session.workflow_id).describe()  # nothing was created
    # A name that resolves to a refused address is refused where it is delivered, and given up at once.
    monkeypatch.setenv("REACT_WEBHOOK_ALLOW", "")
    await session.ask_sync("x", config=agent, webhook_url=f"http://127.1:{receiver.port}/hook")
    outcome = await delivery_outcome(client, f"{session.workflow_id}-webhook-1")
    assert (
        not outcome.delivered and outcome.attempts == 1 and "not a public address" in (outcome.reason or "")
    )
    assert receiver.received == []


async def test_a_worker_killed_mid_delivery_delivers_after_restart_with_the_same_id(client: Client) -> None:
    address = client.service_client.config.target_host
    queue = f"react-webhook-crash-{uuid.uuid4().hex[:8]}"
    options = {"deliver_webhook": {"start_to_close_timeout_s": 4, "initial_interval_s": 0.5}}
    env = {**os.environ, "REACT_ACTIVITY_OPTIONS": json.dumps(options)}
    hanging = Receiver(mode="hang")
    await hanging.start()
    first = spawn_worker(address, queue, env=env)
    second = None
    try:
        session = Sessions(client, task_queue=queue).get(new_session_id())
        await session.ask("Hi", config=scripted_agent(answer("hello")), webhook_url=hanging.url)
        [caught] = await hanging.wait_for(1, delivered=False, timeout_s=90)  # the POST is in flight
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        hanging.mode = "accept"
        second = spawn_worker(address, queue, env=env)
        [delivered] = await hanging.wait_for(1, timeout_s=90)
        outcome = await delivery_outcome(client, caught.webhook_id, timeout_s=30)
    finally:
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                worker.terminate()
                worker.wait(timeout=20)
        await hanging.stop()
    assert delivered.webhook_id == caught.webhook_id and delivered.verified
    assert delivered.body == caught.body
    assert outcome.delivered and outcome.attempts >= 2


async def test_a_call_waiting_for_approval_calls_back_then_the_end_does(
    client: Client, task_queue: str, receiver: Receiver
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = scripted_agent(
        call_tools(tool_call("calculator", {"expression": "2 + 2"}, call_id="c-1")),
        answer("4"),
        tools=["calculator"],
        approval_required=["calculator"],
    )
    accepted = await session.ask("2 + 2?", config=agent, agent_id="calc", webhook_url=receiver.url)
    [waiting] = await receiver.wait_for(1)
    assert waiting.verified and waiting.body["type"] == "approval.waiting"
    assert waiting.body["data"] == {
        "agent": "calc",
        "thread_id": session.workflow_id,
        "workflow_id": session.workflow_id,
        "request_id": accepted.request_id,
        "status": "waiting_approval",
        "answer_truncated": False,
        "call_id": "c-1",
        "tool": "calculator",
    }
    assert (await session.approve("c-1")).status == "accepted"
    [_, ended] = await receiver.wait_for(2)
    assert ended.body["type"] == "request.completed" and ended.body["data"]["answer"] == "4"
    assert ended.webhook_id != waiting.webhook_id


async def test_a_redirect_is_never_followed(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    redirecting = Receiver(mode="redirect")
    await redirecting.start()
    try:
        await session.ask_sync("x", config=scripted_agent(answer("x")), webhook_url=redirecting.url)
        outcome = await delivery_outcome(client, f"{session.workflow_id}-webhook-1")
    finally:
        await redirecting.stop()
    assert not outcome.delivered and outcome.attempts == 1 and "redirected (307)" in (outcome.reason or "")
    assert len(redirecting.received) == 1
