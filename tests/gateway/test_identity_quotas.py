"""Quotas per principal (counted from Temporal) and the request rate (per gateway): 429 by name.

Active requests: while one of a principal's runs is running, its next ask is refused
`quota_exceeded` naming the quota and the numbers, with `Retry-After`, and nothing is asked (no
session exists for that thread); a second gateway on the same Temporal agrees (the count lives
there); other principals are not held. Tokens today: once a principal's runs have used the
budget, its asks are refused until midnight UTC. Requests per minute: the next request over the
limit is `rate_limited`.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from gateway.identity.settings import IdentitySettings, QuotaSettings
from testing import AgentTestEnvironment
from tests.gateway_helpers import GatewayServer, agui_run, run_input, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

CAROL = "carol-token-0123456789"
DAVE = "dave-token-0123456789"
ERIN = "erin-token-0123456789"
TOKENS = f"{CAROL}=carol,{DAVE}=dave,{ERIN}=erin"


async def _count(agents: AgentTestEnvironment, query: str) -> int:
    return (await agents.client.count_workflows(query)).count


async def _until(agents: AgentTestEnvironment, query: str, wanted: int, timeout_s: float = 30) -> None:
    """Wait until the visibility store counts `wanted` workflows for `query`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        if await _count(agents, query) == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{query!r} did not count {wanted} within {timeout_s}s")


async def _ask(gw: GatewayServer, token: str, thread: str, agent: str = "default") -> httpx.Response:
    async with gw.http(token) as http:
        return await http.post(f"/agui/{agent}", json=run_input(thread, f"{thread}-r1"))


async def _held_run(gw: GatewayServer, token: str, thread: str) -> str:
    """Ask the `held` agent (its answer comes after 1.5 s); the last event's type."""
    async with gw.http(token) as http:
        events = await agui_run(http, run_input(thread, f"{thread}-r1"), agent="held")
        return events[-1].type


async def test_the_active_request_quota_is_counted_in_temporal(agents: AgentTestEnvironment) -> None:
    identity = IdentitySettings(quotas=QuotaSettings(max_active_per_principal=1))
    running = (
        "WorkflowId STARTS_WITH 'gw/carol/' AND ExecutionStatus = 'Running' AND WorkflowType = 'ReActRun'"
    )
    async with (
        running_gateway(agents, tokens=TOKENS, identity=identity) as gw,
        running_gateway(agents, tokens=TOKENS, identity=identity) as peer,
    ):
        held = f"held-{uuid.uuid4().hex[:6]}"
        first = asyncio.create_task(_held_run(gw, CAROL, held))
        await _until(agents, running, 1)

        refused_thread = f"refused-{uuid.uuid4().hex[:6]}"
        for gateway in (gw, peer):  # every gateway agrees: the count lives in Temporal
            refused = await _ask(gateway, CAROL, refused_thread)
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert error["code"] == "quota_exceeded"
            assert (
                "max_active_per_principal" in error["message"]
                and "1 active requests of 1" in error["message"]
            )
            assert int(refused.headers["retry-after"]) >= 1
        assert await _count(agents, f"WorkflowId STARTS_WITH 'gw/carol/default/{refused_thread}'") == 0

        other = await _ask(gw, DAVE, f"dave-{uuid.uuid4().hex[:6]}")  # another principal is not held
        assert other.status_code == 200

        assert await first == "RUN_FINISHED"
        await _until(agents, running, 0)
        again = await _ask(peer, CAROL, refused_thread)
        assert again.status_code == 200, again.text


async def test_the_daily_token_budget_refuses_once_spent(agents: AgentTestEnvironment) -> None:
    identity = IdentitySettings(quotas=QuotaSettings(daily_tokens_per_principal=1, tokens_cache_s=0.0))
    async with running_gateway(agents, tokens=TOKENS, identity=identity) as gw:
        thread = f"budget-{uuid.uuid4().hex[:6]}"
        assert (await _ask(gw, ERIN, thread)).status_code == 200  # nothing spent yet today
        await _until(agents, "WorkflowId STARTS_WITH 'gw/erin/' AND ExecutionStatus = 'Completed'", 1)
        refused = await _ask(gw, ERIN, f"{thread}-2")
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == "quota_exceeded" and "daily_tokens_per_principal" in error["message"]
        assert "of 1 today" in error["message"]
        assert 1 <= int(refused.headers["retry-after"]) <= 86_401


async def test_the_request_rate_per_principal(agents: AgentTestEnvironment) -> None:
    identity = IdentitySettings(quotas=QuotaSettings(requests_per_minute=3))
    async with running_gateway(agents, tokens=TOKENS, identity=identity) as gw:
        async with gw.http(CAROL) as http:
            for _ in range(3):
                assert (await http.get("/api/agents")).status_code == 200
            limited = await http.get("/api/agents")
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "rate_limited"
        assert "3 requests a minute" in limited.json()["error"]["message"]
        assert 1 <= int(limited.headers["retry-after"]) <= 20
        async with gw.http(DAVE) as http:
            assert (await http.get("/api/agents")).status_code == 200
