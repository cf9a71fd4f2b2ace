"""End to end: this product's agent uses another of its agents through A2A as a tool (a remote agent tool).

The calling agent runs on a second worker (its own task queue) whose registry has remote A2A
agent tools (`activities.tools.a2a_agent_tool`) pointing at the gateway; the called agents are the
gateway's, served by the tests' worker. The remote answer and its usage come back as the tool's
result, and cancelling the calling run cancels the remote task: both cross the protocol.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from activities.tools.a2a_agent_tool import register_a2a_agent
from activities.tools.tool_registry import ToolRegistry
from clients.runs import Runs
from contracts.session import RequestRecord
from conversation import MessageEntry
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.gateway_helpers import GatewayServer, running_gateway
from worker import build_worker

CAROL = "carol-token-0123456789"
HELPER_ANSWER = "The helper found: 42."
AGENTS = {
    "helper": scripted_agent(answer(HELPER_ANSWER), stream=True),
    "slowhelper": scripted_agent(
        answer("Still thinking. " * 80).model_copy(update={"chunk_chars": 4, "chunk_delay_s": 0.1}),
        stream=True,
    ),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, AGENTS, tokens=f"{CAROL}=carol") as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def caller_runs(agents: AgentTestEnvironment, gw: GatewayServer) -> AsyncIterator[Runs]:
    """Runs on a second worker whose tools are the gateway's agents, reached through A2A."""
    registry = ToolRegistry()
    register_a2a_agent(registry, "helper", f"{gw.url}/a2a/helper", token=CAROL, description="Finds answers")
    register_a2a_agent(registry, "slow_helper", f"{gw.url}/a2a/slowhelper", token=CAROL)
    queue = f"a2a-caller-{uuid.uuid4().hex[:6]}"
    worker = build_worker(
        agents.client, task_queue=queue, registry=registry, store=agents.store, max_cached_workflows=0
    )
    async with worker:
        yield Runs(agents.client, task_queue=queue, store=agents.store)


async def carol_records(agents: AgentTestEnvironment, agent: str) -> list[RequestRecord]:
    """The requests of carol's sessions with `agent` (the tool's remote tasks)."""
    found: list[RequestRecord] = []
    async for execution in agents.client.list_workflows(
        "WorkflowType = 'AgentSession' AND ExecutionStatus = 'Running'"
    ):
        if execution.id.startswith(f"gw/carol/{agent}/"):
            found.extend(await agents.sessions.get(execution.id).requests())
    return found


async def test_an_agent_calls_another_through_a2a_and_gets_its_answer_and_usage(caller_runs: Runs) -> None:
    config = scripted_agent(
        call_tools(tool_call("helper", {"request": "What is the answer?"}, call_id="call-remote")),
        answer("The helper says 42."),
        tools=["helper"],
    )
    run = await caller_runs.start("Ask the helper", config)
    result = await run.result()
    assert result.outcome.status == "completed", result.outcome
    [tool_result] = [
        e.payload.content
        for e in result.entries
        if isinstance(e, MessageEntry) and e.payload.tool_call_id == "call-remote"
    ]
    value = json.loads(tool_result)
    payload = value.get("result", value)
    assert payload["answer"] == HELPER_ANSWER
    assert payload["usage"]["llm_calls"] == 1  # the remote run's usage crossed the protocol
    assert ":" in payload["task_id"]


async def test_cancelling_the_calling_run_cancels_the_remote_task(
    caller_runs: Runs, agents: AgentTestEnvironment
) -> None:
    config = scripted_agent(
        call_tools(tool_call("slow_helper", {"request": "Think long"})),
        answer("unreachable"),
        tools=["slow_helper"],
    )
    config = config.model_copy(update={"tool_timeout_s": 120.0})
    run = await caller_runs.start("Ask the slow helper", config)
    running: list[RequestRecord] = []
    async with asyncio.timeout(60):
        while not running:
            await asyncio.sleep(0.3)
            running = [r for r in await carol_records(agents, "slowhelper") if r.status == "running"]
    assert (await run.cancel("stop it")).status == "accepted"
    assert (await run.result()).outcome.status == "cancelled"
    [remote] = running
    async with asyncio.timeout(30):
        while True:
            records = {r.request_id: r for r in await carol_records(agents, "slowhelper")}
            if records[remote.request_id].status != "running":
                break
            await asyncio.sleep(0.3)
    assert records[remote.request_id].status == "cancelled"
