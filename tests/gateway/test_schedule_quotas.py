"""Schedules under the run quotas: firings are admitted like asks; a principal's schedules are bounded.

A real gateway on the `agents` fixture's dev server and worker (the worker reads
`REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL` as the gateway does: set here for both). A firing at
the limit is `skipped` with refusal `quota_exceeded` (no session asked, not retried); once the
slot is free, a firing asks again. The `REACT_SCHEDULE_MAX_PER_OWNER`-th schedule is the last:
the next is 429 `quota_exceeded` by name, and nothing is created. Each test has its own principal.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from contracts.schedules import FiringResult
from gateway.identity.settings import IdentitySettings, QuotaSettings
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import TEST_AGENTS, GatewayServer, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

TARA = "tara-token-0123456789"
UMA = "uma-token-0123456789"
TOKENS = f"{TARA}=tara,{UMA}=uma"
AGENTS = {**TEST_AGENTS, "long": scripted_agent(answer("A long answer.", delay_s=60), stream=True)}


async def _firings(gw: GatewayServer, name: str, count: int) -> list[dict[str, Any]]:
    """The schedule's ended firings, once there are `count`."""
    firings: list[dict[str, Any]] = []
    async with gw.http(UMA) as http:
        for _ in range(150):
            shown = (await http.get(f"/api/schedules/{name}")).json()
            firings = [f for f in shown["recent_firings"] if f["status"] != "running"]
            if len(firings) >= count:
                return firings
            await asyncio.sleep(0.2)
    raise AssertionError(f"{name}: {firings}")


async def test_a_firing_at_the_active_limit_is_skipped_by_name(
    agents: AgentTestEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL", "1")  # the worker's setting
    identity = IdentitySettings(quotas=QuotaSettings(max_active_per_principal=1))
    async with running_gateway(agents, AGENTS, tokens=TOKENS, identity=identity) as gw:
        tag = uuid.uuid4().hex[:6]
        name, thread = f"q-{tag}", f"fired-{tag}"
        async with gw.http(UMA) as http:
            held = await http.post(f"/api/threads/long/long-{tag}/requests", json={"message": "Hi"})
            assert held.status_code == 202
            created = await http.post(
                "/api/schedules",
                json={
                    "agent": "default",
                    "message": "Tick.",
                    "every_s": 3600,
                    "thread_id": thread,
                    "name": name,
                },
            )
            assert created.status_code == 201, created.text
            assert (await http.post(f"/api/schedules/{name}/trigger")).status_code == 202
            [skipped] = await _firings(gw, name, 1)
            assert skipped["status"] == "skipped" and skipped["request_id"] is None
            firing = agents.client.get_workflow_handle(skipped["firing_id"], result_type=FiringResult)
            result = await firing.result()
            assert result.refusal == "quota_exceeded" and "max_active_per_principal" in (result.message or "")
            thread_of_firing = await http.get(f"/api/threads/default/{thread}")
            assert thread_of_firing.status_code == 404  # nothing was asked

            await agents.client.get_workflow_handle(f"gw/uma/long/long-{tag}").terminate(reason="test")
            await asyncio.sleep(1.1)  # the admission checks its slots at most once a second
            assert (await http.post(f"/api/schedules/{name}/trigger")).status_code == 202
            firings = await _firings(gw, name, 2)  # the slot is free: the held session is gone
            assert firings[-1]["status"] == "asked" and firings[-1]["thread_id"] == thread
            await http.delete(f"/api/schedules/{name}")


async def test_a_principals_schedules_are_bounded(
    agents: AgentTestEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_SCHEDULE_MAX_PER_OWNER", "3")
    body: dict[str, Any] = {"agent": "default", "message": "Tick.", "every_s": 3600, "paused": True}
    async with running_gateway(agents, AGENTS, tokens=TOKENS) as gw, gw.http(TARA) as http:
        for n in range(3):
            assert (await http.post("/api/schedules", json={**body, "name": f"b{n}"})).status_code == 201
        for _ in range(100):  # counted in visibility: wait until it shows the three
            if len((await http.get("/api/schedules")).json()["schedules"]) == 3:
                break
            await asyncio.sleep(0.1)
        refused = await http.post("/api/schedules", json={**body, "name": "b3"})
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == "quota_exceeded" and "max_schedules_per_owner" in error["message"]
        assert "3 schedules of 3" in error["message"] and "REACT_SCHEDULE_MAX_PER_OWNER" in error["message"]
        assert (await http.get("/api/schedules/b3")).status_code == 404
        assert (await http.delete("/api/schedules/b0")).status_code in (200, 204)
        created = refused
        for _ in range(100):  # room again once the deletion is visible
            created = await http.post("/api/schedules", json={**body, "name": "b3"})
            if created.status_code == 201:
                break
            await asyncio.sleep(0.1)
        assert created.status_code == 201
        for n in (1, 2, 3):
            await http.delete(f"/api/schedules/b{n}")
