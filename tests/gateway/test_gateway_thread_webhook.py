"""A thread's default webhook over HTTP (`gateway/threads/thread_webhook.py`) and an agent profile's.

A real gateway in-process with alice's and bob's tokens, whose agent `hooked` names a default
webhook; real receivers on 127.0.0.1 verify every signature with `standardwebhooks`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, running_gateway
from tests.webhook_receiver import Receiver


@pytest_asyncio.fixture(loop_scope="session")
async def receivers() -> AsyncIterator[tuple[Receiver, Receiver, Receiver]]:
    """The agent's, the thread's and an ask's own receiver."""
    started = (Receiver(), Receiver(), Receiver())
    for receiver in started:
        await receiver.start()
    yield started
    for receiver in started:
        await receiver.stop()


async def test_a_threads_default_webhook_is_set_read_refused_and_cleared_over_http(
    agents: AgentTestEnvironment, receivers: tuple[Receiver, Receiver, Receiver]
) -> None:
    profile, thread_hook, own = receivers
    hooked = scripted_agent(answer("hello"), webhook_url=profile.url)
    thread = f"wh-{uuid.uuid4().hex[:8]}"
    base = f"/api/threads/hooked/{thread}"
    async with (
        running_gateway(agents, {"hooked": hooked}, tokens=TEST_TOKENS) as gateway,
        gateway.http(ALICE) as http,
    ):
        missing = await http.put(f"{base}/webhook", json={"webhook_url": thread_hook.url})
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")

        async def ask(**body: object) -> str:
            posted = await http.post(f"{base}/requests", json={"message": "Hi", **body})
            assert posted.status_code == 202, posted.text
            request_id = posted.json()["request_id"]
            done = (await http.get(f"{base}/requests/{request_id}?wait_s=20")).json()
            assert done.get("status") == "completed", done
            return request_id

        by_profile = await ask()  # neither the ask nor the thread names one: the agent's
        put = await http.put(f"{base}/webhook", json={"webhook_url": thread_hook.url})
        assert put.status_code == 200, put.text
        assert put.json() == {
            "thread_id": thread,
            "webhook_url": thread_hook.url,
            "agent_webhook_url": profile.url,
        }
        by_thread = await ask()
        by_own = await ask(webhook_url=own.url)
        bodies: list[object] = [
            {"webhook_url": "http://10.0.0.1/"},
            {"webhook_url": 5},
            {"url": thread_hook.url},
            [],
        ]
        for bad in bodies:
            refused = await http.put(f"{base}/webhook", json=bad)
            assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_input"), bad
            assert "webhook_url" in refused.json()["error"]["message"]
        assert (await http.get(f"{base}/webhook")).json()["webhook_url"] == thread_hook.url  # unchanged
        cleared = await http.put(f"{base}/webhook", json={"webhook_url": None})
        assert cleared.json()["webhook_url"] is None
        by_profile_again = await ask()

        async with gateway.http(BOB) as other:  # alice's thread does not exist for bob
            for response in (
                await other.get(f"{base}/webhook"),
                await other.put(f"{base}/webhook", json={"webhook_url": None}),
            ):
                assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")

    got_profile = await profile.wait_for(2)
    [got_thread] = await thread_hook.wait_for(1)
    [got_own] = await own.wait_for(1)
    assert all(r.verified for r in (*got_profile, got_thread, got_own))
    assert [r.body["data"]["request_id"] for r in got_profile] == [by_profile, by_profile_again]
    assert got_thread.body["data"]["request_id"] == by_thread
    assert got_own.body["data"]["request_id"] == by_own
    assert len(thread_hook.received) == 1 and len(own.received) == 1
