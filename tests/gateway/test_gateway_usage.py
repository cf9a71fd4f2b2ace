"""`GET /api/usage` through a real gateway, the tests' worker and the test session's store.

Two principals of this module (fresh names: the store is the test session's, shared with other
modules) ask agents of this module: answers and a failure. Each request's row is written by its
session when it ends (`record_usage`), and the report matches the sessions' own request records.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from contracts.usage import DEFAULT_GROUP_BY
from testing import AgentTestEnvironment, answer, scripted_agent, with_provider_error
from tests.gateway_helpers import GatewayServer, running_gateway

TAG = uuid.uuid4().hex[:6]
USER, OTHER, ADMIN_USER = f"u{TAG}", f"o{TAG}", f"a{TAG}"
USER_TOKEN, OTHER_TOKEN, ADMIN_TOKEN = (f"{name}-token-0123456789" for name in (USER, OTHER, ADMIN_USER))
HELPER, BROKEN = f"help{TAG}", f"broke{TAG}"
AGENTS = {
    HELPER: scripted_agent(answer("Happy to help.")),
    BROKEN: scripted_agent(with_provider_error(answer("never"), "auth")),
}
ROW_KEYS = {"requests", "failed", "prompt_tokens", "completion_tokens", "cost_usd"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    tokens = f"{USER_TOKEN}={USER},{OTHER_TOKEN}={OTHER},{ADMIN_TOKEN}={ADMIN_USER}:agents:ask+agents:admin"
    async with running_gateway(agents, AGENTS, tokens=tokens) as server:
        yield server


async def ask(gateway: GatewayServer, token: str, agent: str, thread: str, message: str) -> dict[str, Any]:
    async with gateway.http(token) as http:
        posted = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": message})
        assert posted.status_code == 202, posted.text
        request_id = posted.json()["request_id"]
        done = await http.get(f"/api/threads/{agent}/{thread}/requests/{request_id}", params={"wait_s": 30})
        body: dict[str, Any] = done.json()
        assert body["status"] in ("completed", "failed"), body
        return body


async def report(gateway: GatewayServer, token: str, **params: str) -> list[dict[str, Any]]:
    async with gateway.http(token) as http:
        got = await http.get("/api/usage", params=params)
        assert got.status_code == 200, got.text
        rows: list[dict[str, Any]] = got.json()["rows"]
        return [row for row in rows if row.get("agent") in (HELPER, BROKEN, None)]


async def report_when(
    gateway: GatewayServer, token: str, requests: int, timeout_s: float = 30, **params: str
) -> list[dict[str, Any]]:
    """The report once it counts `requests` of this module's agents, failing the test after `timeout_s`.

    A row is written just after its request's end is visible, so the first read may miss it.
    """
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        rows = await report(gateway, token, **params)
        if sum(row["requests"] for row in rows) >= requests:
            return rows
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the report did not count {requests} requests in {timeout_s}s: {rows}")
        await asyncio.sleep(0.2)


async def expected_usage(gateway: GatewayServer, principal: str, agent: str, thread: str) -> dict[str, Any]:
    """What the session's own request records say of the thread: counts and tokens."""
    records = await gateway.ctx.sessions.get(f"gw/{principal}/{agent}/{thread}").requests()
    return {
        "requests": len(records),
        "failed": sum(r.outcome.status == "failed" for r in records),
        "prompt_tokens": sum(r.outcome.usage.prompt_tokens for r in records),
        "completion_tokens": sum(r.outcome.usage.completion_tokens for r in records),
    }


async def test_usage_by_agent_version_day_own_and_admin(gateway: GatewayServer) -> None:
    thread, broken_thread, other_thread = (f"t-{uuid.uuid4().hex[:8]}" for _ in range(3))
    for message in ("one", "two", "three"):
        assert (await ask(gateway, USER_TOKEN, HELPER, thread, message))["status"] == "completed"
    assert (await ask(gateway, USER_TOKEN, BROKEN, broken_thread, "fail"))["status"] == "failed"
    assert (await ask(gateway, OTHER_TOKEN, HELPER, other_thread, "mine"))["status"] == "completed"

    rows = await report_when(gateway, USER_TOKEN, 4)
    assert all(set(row) == {*DEFAULT_GROUP_BY, *ROW_KEYS, "latency_ms_p50", "latency_ms_p99"} for row in rows)
    by_agent = {row["agent"]: row for row in rows}
    assert set(by_agent) == {HELPER, BROKEN}
    helper = await expected_usage(gateway, USER, HELPER, thread)
    broken = await expected_usage(gateway, USER, BROKEN, broken_thread)
    assert helper["requests"] == 3 and helper["prompt_tokens"] > 0 and helper["failed"] == 0
    assert {k: by_agent[HELPER][k] for k in helper} == helper
    assert {k: by_agent[BROKEN][k] for k in broken} == {**broken, "requests": 1, "failed": 1}
    for row in rows:
        assert row["version"] is None  # code profiles
        assert 0 <= row["latency_ms_p50"] <= row["latency_ms_p99"]

    other = await report_when(gateway, OTHER_TOKEN, 1, group_by="agent")
    assert [(row["agent"], row["requests"]) for row in other] == [(HELPER, 1)]  # nothing of USER's
    assert "principal" not in other[0]

    everyone = await report_when(gateway, ADMIN_TOKEN, 5, group_by="agent")
    assert {(row["principal"], row["agent"]): row["requests"] for row in everyone} == {
        (USER, HELPER): 3,
        (USER, BROKEN): 1,
        (OTHER, HELPER): 1,
    }
    day = rows[0]["day"]
    (by_day,) = await report(gateway, USER_TOKEN, **{"from": day, "to": day, "group_by": "day"})
    assert {k: by_day[k] for k in ("day", "requests", "failed", "prompt_tokens", "completion_tokens")} == {
        "day": day,
        "requests": 4,
        "failed": 1,
        "prompt_tokens": helper["prompt_tokens"] + broken["prompt_tokens"],
        "completion_tokens": helper["completion_tokens"] + broken["completion_tokens"],
    }
    assert set(by_day) == {"day", *ROW_KEYS, "latency_ms_p50", "latency_ms_p99"}


async def test_bad_query_parameters_are_refused_by_name(gateway: GatewayServer) -> None:
    async with gateway.http(USER_TOKEN) as http:
        refusals = {
            "from": await http.get("/api/usage", params={"from": "12/01/2026"}),
            "to": await http.get("/api/usage", params={"to": "2026-02-30"}),
            "order": await http.get("/api/usage", params={"from": "2026-12-02", "to": "2026-12-01"}),
            "group_by": await http.get("/api/usage", params={"group_by": "agent,model"}),
        }
        assert {name: r.status_code for name, r in refusals.items()} == dict.fromkeys(refusals, 400)
        assert all(r.json()["error"]["code"] == "invalid_input" for r in refusals.values())
        assert "from must be a day" in refusals["from"].json()["error"]["message"]
        assert "to must be a day" in refusals["to"].json()["error"]["message"]
        assert "must not be after to" in refusals["order"].json()["error"]["message"]
        assert "'model' is unknown" in refusals["group_by"].json()["error"]["message"]
    async with gateway.http() as http:
        assert (await http.get("/api/usage")).status_code == 401
