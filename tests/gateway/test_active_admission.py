"""The active-request limit holds under concurrency: one `RunAdmission` per principal admits every ask.

Real gateways on the `agents` fixture's dev server and worker. Twenty asks at once, through two
gateways and two protocols (AG-UI and the background requests), against a limit of 2: at most 2
runs start (counted in Temporal), the others are 429 `quota_exceeded` with `Retry-After` and
start nothing; once the two end, asks are admitted again. A run terminated from outside frees its
slot; a refused ask over the limit never starts a session. Each test has its own principal (the
admission workflow of a principal outlives a test).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from contracts.admission import SLOTS_QUERY, AdmissionState, admission_workflow_id
from gateway.identity.settings import IdentitySettings, QuotaSettings
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import TEST_AGENTS, GatewayServer, run_input, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUINN = "quinn-token-0123456789"
RHEA = "rhea-token-0123456789"
TOKENS = f"{QUINN}=quinn,{RHEA}=rhea"
AGENTS = {**TEST_AGENTS, "long": scripted_agent(answer("A long answer.", delay_s=60), stream=True)}


async def _count(agents: AgentTestEnvironment, query: str) -> int:
    return (await agents.client.count_workflows(query)).count


async def _agui_ask(gw: GatewayServer, token: str, agent: str, thread: str) -> int:
    """An AG-UI ask; its HTTP status (the stream is left once it starts: the run goes on)."""
    async with (
        gw.http(token) as http,
        http.stream("POST", f"/agui/{agent}", json=run_input(thread, f"{thread}-r1")) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            _check_refusal(response)
        return response.status_code


async def _background_ask(gw: GatewayServer, token: str, agent: str, thread: str) -> int:
    """A background request (`POST .../requests`); its HTTP status."""
    async with gw.http(token) as http:
        response = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": "Hi"})
        _check_refusal(response)
        return response.status_code


def _check_refusal(response: httpx.Response) -> None:
    if response.status_code == 429:
        error = response.json()["error"]
        assert error["code"] == "quota_exceeded" and "max_active_per_principal" in error["message"]
        assert int(response.headers["retry-after"]) >= 1


async def _running_runs(agents: AgentTestEnvironment, principal: str, wanted: int) -> list[str]:
    """The ids of `principal`'s running runs, once visibility counts `wanted` of them."""
    query = (
        f"WorkflowType = 'ReActRun' AND WorkflowId STARTS_WITH 'gw/{principal}/' "
        "AND ExecutionStatus = 'Running'"
    )
    listed: list[str] = []
    for _ in range(150):
        listed = [w.id async for w in agents.client.list_workflows(query)]
        if len(listed) == wanted:
            return listed
        await asyncio.sleep(0.1)
    raise AssertionError(f"{principal} runs {listed}, not {wanted}")


async def _admitted_soon(gw: GatewayServer, token: str, thread: str, agent: str = "default") -> None:
    """An ask is admitted within a few seconds (the admission's check runs at most once a second)."""
    status = 429
    for _ in range(40):
        status = await _background_ask(gw, token, agent, thread)
        if status == 202:
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"still {status}")


async def test_twenty_concurrent_asks_start_at_most_the_limit(agents: AgentTestEnvironment) -> None:
    identity = IdentitySettings(quotas=QuotaSettings(max_active_per_principal=2))
    runs = "WorkflowType = 'ReActRun' AND WorkflowId STARTS_WITH 'gw/quinn/'"
    sessions = "WorkflowType = 'AgentSession' AND WorkflowId STARTS_WITH 'gw/quinn/'"
    async with (
        running_gateway(agents, AGENTS, tokens=TOKENS, identity=identity) as gw,
        running_gateway(agents, AGENTS, tokens=TOKENS, identity=identity) as peer,
    ):
        tag = uuid.uuid4().hex[:6]
        asks = [_agui_ask(gw, QUINN, "long", f"c{tag}-{n}") for n in range(10)]
        asks += [_background_ask(peer, QUINN, "long", f"c{tag}-{n}") for n in range(10, 20)]
        statuses = await asyncio.gather(*asks)
        assert len([s for s in statuses if s in (200, 202)]) == 2 and statuses.count(429) == 18, statuses

        started = await _running_runs(agents, "quinn", 2)
        await asyncio.sleep(1)  # visibility has caught up with every start by now
        assert await _count(agents, runs) == 2
        assert await _count(agents, sessions) == 2  # a refused ask started nothing

        for run_id in started:  # killed from outside: their requests end, their slots are freed
            await agents.client.get_workflow_handle(run_id).terminate(reason="killed by the test")
        await _admitted_soon(peer, QUINN, f"after-{tag}")


async def test_a_slot_is_freed_when_its_request_ends_or_its_session_is_gone(
    agents: AgentTestEnvironment,
) -> None:
    identity = IdentitySettings(quotas=QuotaSettings(max_active_per_principal=1))
    async with running_gateway(agents, AGENTS, tokens=TOKENS, identity=identity) as gw:
        tag = uuid.uuid4().hex[:6]
        assert await _background_ask(gw, RHEA, "held", f"held-{tag}") == 202
        assert await _background_ask(gw, RHEA, "default", f"next-{tag}") == 429
        await _admitted_soon(gw, RHEA, f"next-{tag}")  # the held run ends after 1.5 s

        await _running_runs(agents, "rhea", 0)
        await _admitted_soon(gw, RHEA, f"next-{tag}")  # the ask above ended: its slot is freed too
        await _running_runs(agents, "rhea", 0)
        await _admitted_soon(gw, RHEA, f"long-{tag}", agent="long")
        assert await _background_ask(gw, RHEA, "default", f"last-{tag}") == 429
        session = f"gw/rhea/long/long-{tag}"
        await agents.client.get_workflow_handle(session).terminate(reason="the whole session killed")
        await _admitted_soon(gw, RHEA, f"last-{tag}")

        state = await agents.client.get_workflow_handle(admission_workflow_id("rhea")).query(
            SLOTS_QUERY, result_type=AdmissionState
        )
        assert [s.session_id for s in state.slots] == [f"gw/rhea/default/last-{tag}"]
        assert {d.outcome for d in state.recent} == {"granted", "refused"}
