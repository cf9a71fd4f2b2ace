"""Webhooks asked through the gateway: a long URL refused by name, bodies naming things as the gateway does.

A real gateway in-process with alice's token and a real receiver on 127.0.0.1 that verifies every
signature. The typed client's side (ids as they are) is in `tests/webhooks/test_webhook_defaults.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from contracts.webhooks import MAX_WEBHOOK_URL_CHARS
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, TEST_TOKENS, running_gateway
from tests.webhook_receiver import Receiver


@pytest_asyncio.fixture(loop_scope="session")
async def receiver() -> AsyncIterator[Receiver]:
    receiving = Receiver()
    await receiving.start()
    yield receiving
    await receiving.stop()


async def test_a_webhook_url_over_the_bound_is_400_invalid_input_naming_the_field_everywhere(
    agents: AgentTestEnvironment, receiver: Receiver
) -> None:
    long_url = receiver.url + "?" + "a" * MAX_WEBHOOK_URL_CHARS
    thread = f"long-{uuid.uuid4().hex[:8]}"
    base = f"/api/threads/default/{thread}"
    async with running_gateway(agents, tokens=TEST_TOKENS) as gateway, gateway.http(ALICE) as http:
        refusals = [await http.post(f"{base}/requests", json={"message": "Hi", "webhook_url": long_url})]
        posted = await http.post(f"{base}/requests", json={"message": "Hi"})
        assert posted.status_code == 202, posted.text
        refusals.append(await http.put(f"{base}/webhook", json={"webhook_url": long_url}))
        refusals.append(
            await http.post(
                "/api/schedules",
                json={"agent": "default", "message": "m", "every_s": 60, "webhook_url": long_url},
            )
        )
        for refused in refusals:
            assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_input"), (
                refused.text
            )
            assert refused.json()["error"]["message"].startswith("webhook_url: at most 2,000 characters")
        assert (await http.get(f"{base}/webhook")).json()["webhook_url"] is None  # nothing changed
        assert (await http.get("/api/schedules")).json() == {"schedules": []}
    assert receiver.received == []


async def test_webhook_bodies_name_the_thread_and_the_schedule_as_the_gateway_does(
    agents: AgentTestEnvironment, receiver: Receiver
) -> None:
    thread, name = f"named-{uuid.uuid4().hex[:8]}", f"digest-{uuid.uuid4().hex[:6]}"
    async with running_gateway(agents, tokens=TEST_TOKENS) as gateway, gateway.http(ALICE) as http:
        posted = await http.post(
            f"/api/threads/default/{thread}/requests", json={"message": "Hi", "webhook_url": receiver.url}
        )
        assert posted.status_code == 202, posted.text
        [ended] = await receiver.wait_for(1)
        created = await http.post(
            "/api/schedules",
            json={
                "agent": "default",
                "message": "Digest.",
                "every_s": 3600,
                "name": name,
                "thread_id": thread,
                "webhook_url": receiver.url,
            },
        )
        assert created.status_code == 201, created.text
        assert (await http.post(f"/api/schedules/{name}/trigger")).status_code == 202
        got = await receiver.wait_for(3)
        await http.delete(f"/api/schedules/{name}")
    assert ended.verified and ended.body["data"]["thread_id"] == thread
    assert ended.body["data"]["workflow_id"] == f"gw/alice/default/{thread}"
    assert ended.body["data"]["request_id"] == posted.json()["request_id"]
    [fired] = [r for r in got if r.body["type"] == "schedule.fired"]
    [firing_end] = [r for r in got[1:] if r.body["type"] == "request.completed"]
    for body in (fired.body["data"], firing_end.body["data"]):
        assert (body["schedule_id"], body["thread_id"]) == (name, thread), body
        assert body["workflow_id"] == f"gw/alice/default/{thread}"
