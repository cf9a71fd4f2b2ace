"""Schedules and background requests over HTTP (`gateway/schedules/`).

A real gateway in-process (`tests.gateway_helpers`) with alice's and bob's tokens, on the `agents`
fixture's dev server and worker; schedules fire every second on the dev server.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, running_gateway
from tests.webhook_receiver import Receiver

NOT_FOUND = {"error": {"code": "not_found", "message": "no such schedule"}}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, tokens=TEST_TOKENS) as server:
        yield server


async def until_fired(gateway: GatewayServer, name: str, count: int) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    async with gateway.http(ALICE) as http:
        for _ in range(150):
            shown = (await http.get(f"/api/schedules/{name}")).json()
            if sum(f["status"] == "asked" for f in shown["recent_firings"]) >= count:
                return shown
            await asyncio.sleep(0.2)
    raise AssertionError(f"{name} did not fire {count} times: {shown}")


async def test_a_schedule_over_http_fires_into_the_owners_thread(gateway: GatewayServer) -> None:
    thread, name = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:6]}"
    async with gateway.http(ALICE) as http:
        created = await http.post(
            "/api/schedules",
            json={
                "agent": "default",
                "message": "Anything new?",
                "every_s": 1,
                "thread_id": thread,
                "name": name,
            },
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert (body["schedule_id"], body["thread_id"], body["overlap"]) == (name, thread, "skip")
        shown = await until_fired(gateway, name, 1)
        firing = next(f for f in shown["recent_firings"] if f["status"] == "asked")
        assert firing["thread_id"] == thread and firing["request_id"]
        request = await http.get(f"/api/threads/default/{thread}/requests/{firing['request_id']}?wait_s=20")
        assert request.json()["status"] == "completed" and request.json()["answer"]
        paused = await http.post(f"/api/schedules/{name}/pause", json={"note": "quiet hours"})
        assert paused.status_code == 200 and (paused.json()["paused"], paused.json()["note"]) == (
            True,
            "quiet hours",
        )
        assert (await http.post(f"/api/schedules/{name}/trigger")).status_code == 202
        assert (await http.post(f"/api/schedules/{name}/unpause")).json()["paused"] is False
        listed: list[dict[str, Any]] = []
        for _ in range(100):
            listed = (await http.get("/api/schedules")).json()["schedules"]
            if [s["schedule_id"] for s in listed] == [name]:
                break
            await asyncio.sleep(0.2)
        assert [s["schedule_id"] for s in listed] == [name]

    async with gateway.http(BOB) as http:  # another principal's schedule does not exist for bob
        assert (await http.get("/api/schedules")).json() == {"schedules": []}
        for method, path in (
            ("GET", f"/api/schedules/{name}"),
            ("POST", f"/api/schedules/{name}/pause"),
            ("POST", f"/api/schedules/{name}/trigger"),
            ("DELETE", f"/api/schedules/{name}"),
        ):
            response = await http.request(method, path)
            assert (response.status_code, response.json()) == (404, NOT_FOUND), path
        other = await http.get(f"/api/threads/default/{thread}/requests/{firing['request_id']}")
        assert other.status_code == 404

    async with gateway.http(ALICE) as http:
        assert (await http.delete(f"/api/schedules/{name}")).json() == {"deleted": name}
        assert (await http.get(f"/api/schedules/{name}")).status_code == 404


async def test_a_fresh_thread_per_firing_is_the_owners(gateway: GatewayServer) -> None:
    name = f"f-{uuid.uuid4().hex[:6]}"
    async with gateway.http(ALICE) as http:
        created = await http.post(
            "/api/schedules", json={"agent": "default", "message": "Digest.", "every_s": 1, "name": name}
        )
        assert created.status_code == 201 and created.json()["overlap"] == "allow_all"
        shown = await until_fired(gateway, name, 1)
        await http.delete(f"/api/schedules/{name}")
        firing = next(f for f in shown["recent_firings"] if f["status"] == "asked")
        assert firing["thread_id"].startswith(f"sched-{name}-")
        thread = (await http.get(f"/api/threads/default/{firing['thread_id']}")).json()
        assert thread["thread_id"] == firing["thread_id"]


async def test_bad_schedules_are_400_naming_the_field_and_create_nothing(gateway: GatewayServer) -> None:
    cases: list[tuple[object, str]] = [
        ({"agent": "default", "message": "m", "cron": "nope"}, "cron:"),
        ({"agent": "default", "message": "m", "every_s": 0}, "every_s:"),
        ({"agent": "default", "message": "m", "every_s": "5"}, "every_s:"),
        ({"agent": "default", "message": "m", "cron": "@daily", "timezone": "Atlantis/Capital"}, "timezone:"),
        (
            {"agent": "default", "message": "m", "every_s": 60, "webhook_url": "http://10.0.0.1/"},
            "webhook_url:",
        ),
        (
            {"agent": "default", "message": "m", "every_s": 60, "overlap": "sometimes", "thread_id": "t"},
            "overlap",
        ),
        ({"agent": "default", "every_s": 60}, "message:"),
        ({"agent": "default", "message": "m", "every_s": 60, "color": "red"}, "color:"),
        ([1, 2], "JSON object"),
    ]
    async with gateway.http(BOB) as http:
        for body, named in cases:
            response = await http.post("/api/schedules", json=body)
            assert response.status_code == 400, (body, response.text)
            assert (
                response.json()["error"]["code"] == "invalid_input"
                and named in response.json()["error"]["message"]
            )
        assert (
            await http.post("/api/schedules", json={"agent": "nobody", "message": "m", "every_s": 60})
        ).status_code == 404
        await asyncio.sleep(1)
        assert (await http.get("/api/schedules")).json() == {"schedules": []}


async def test_a_background_request_answers_202_then_its_status_and_calls_back(
    gateway: GatewayServer,
) -> None:
    thread = f"bg-{uuid.uuid4().hex[:8]}"
    receiver = Receiver()
    await receiver.start()
    try:
        async with gateway.http(ALICE) as http:
            posted = await http.post(
                f"/api/threads/held/{thread}/requests",
                json={"message": "Take your time.", "webhook_url": receiver.url},
            )
            assert posted.status_code == 202, posted.text
            request_id = posted.json()["request_id"]
            path = f"/api/threads/held/{thread}/requests/{request_id}"
            first = (await http.get(path)).json()
            assert first["status"] in ("queued", "running")
            queued = await http.post(
                f"/api/threads/held/{thread}/requests", json={"message": "And then?", "on_busy": "enqueue"}
            )
            behind = (
                await http.get(f"/api/threads/held/{thread}/requests/{queued.json()['request_id']}")
            ).json()
            assert behind["status"] == "queued"
            busy = await http.post(f"/api/threads/held/{thread}/requests", json={"message": "Now!"})
            assert (busy.status_code, busy.json()["error"]["code"]) == (400, "busy")
            done = (await http.get(f"{path}?wait_s=20")).json()
            assert done["status"] == "completed" and done["answer"].startswith("A held answer")
            for bad in ("?wait_s=31", "?wait_s=-1", "?wait_s=soon"):
                assert (await http.get(path + bad)).status_code == 400
            assert (await http.get(f"/api/threads/held/{thread}/requests/nope")).status_code == 404
            for junk in (
                {"message": 5},
                {"message": "x", "on_busy": "maybe"},
                {"message": "x", "webhook_url": "file:///etc"},
            ):
                refused = await http.post(f"/api/threads/held/{thread}/requests", json=junk)
                assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input", junk
        [hook] = await receiver.wait_for(1)
        assert hook.verified and hook.body["type"] == "request.completed"
        assert hook.body["data"]["request_id"] == request_id
    finally:
        await receiver.stop()


async def test_a_background_request_reports_an_approval_that_waits_then_its_end(
    gateway: GatewayServer,
) -> None:
    """The core's state model holds here too: `awaiting_approval` while a call waits (its webhook sent)."""
    thread = f"bg-{uuid.uuid4().hex[:8]}"
    receiver = Receiver()
    await receiver.start()
    try:
        async with gateway.http(ALICE) as http:
            posted = await http.post(
                f"/api/threads/approver/{thread}/requests",
                json={"message": "What is 17 * 23?", "webhook_url": receiver.url},
            )
            assert posted.status_code == 202, posted.text
            path = f"/api/threads/approver/{thread}/requests/{posted.json()['request_id']}"
            waiting = (await http.get(f"{path}?wait_s=20")).json()
            assert waiting["status"] == "awaiting_approval", waiting
            [hook] = await receiver.wait_for(1)
            assert hook.verified and hook.body["type"] == "approval.waiting"
            session = gateway.ctx.sessions.get(session_id(Principal("alice"), "approver", thread))
            assert (await session.approve("call-calc", approver="alice")).status != "rejected"
            done = (await http.get(f"{path}?wait_s=20")).json()
            assert (done["status"], done["answer"]) == ("completed", "17 * 23 = 391."), done
        hooks = await receiver.wait_for(2)
        assert [h.body["type"] for h in hooks] == ["approval.waiting", "request.completed"]
    finally:
        await receiver.stop()
