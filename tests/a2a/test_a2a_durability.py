"""Crashes under A2A and MCP: a worker SIGKILLed mid task and mid `ask`, a gateway gone mid stream.

The worker is the real `worker.py` process (`tests.helpers.spawn_worker`) on its own task queue;
the gateway serves that queue. The task completes in each case: the stream (or the client's
resubscribe, through a fresh gateway) ends with every status update and the answer once.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager

import httpx2
import pytest
from a2a.types.a2a_pb2 import GetTaskRequest, StreamResponse, SubscribeToTaskRequest, TaskState
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from testing import AgentTestEnvironment
from tests.a2a_helpers import a2a_client, answers, final_task, is_answer_delta, steps, texts_of
from tests.a2a_helpers import message as a2a_message
from tests.gateway_agents import SLOW_ANSWER, slow_adder
from tests.gateway_helpers import ALICE, TEST_TOKENS, auth, running_gateway
from tests.helpers import spawn_worker

ANSWER = SLOW_ANSWER
AGENTS = {"default": slow_adder(0.08)}


@contextmanager
def worker_process(agents: AgentTestEnvironment, queue: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`worker.py` on `queue`; the list holds the live process (a test may kill and replace it)."""
    address = agents.client.service_client.config.target_host
    processes = [spawn_worker(address, queue)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=20)


def kill_and_replace(
    agents: AgentTestEnvironment, queue: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    processes[-1].send_signal(signal.SIGKILL)
    processes[-1].wait(timeout=10)
    processes.append(spawn_worker(agents.client.service_client.config.target_host, queue))


async def test_a_worker_killed_mid_a2a_task_the_task_completes(agents: AgentTestEnvironment) -> None:
    queue = f"a2a-crash-{uuid.uuid4().hex[:6]}"
    with worker_process(agents, queue) as processes:
        async with (
            running_gateway(agents, AGENTS, tokens=TEST_TOKENS, task_queue=queue) as gw,
            a2a_client(gw, "default", ALICE) as alice,
        ):
            events: list[StreamResponse] = []
            async with asyncio.timeout(150):
                async for event in alice.send_message(a2a_message("Add 2 and 3, slowly")):
                    events.append(event)
                    if is_answer_delta(event) and len(processes) == 1:
                        kill_and_replace(agents, queue, processes)
    assert len(processes) == 2
    assert final_task(events).status.state == TaskState.TASK_STATE_COMPLETED
    assert answers(events) == [ANSWER]
    assert steps(events).count("tool_completed") == 1  # the tool ran once: the crash hit the model call


async def test_a_worker_killed_mid_mcp_ask_the_ask_completes(agents: AgentTestEnvironment) -> None:
    queue = f"mcp-crash-{uuid.uuid4().hex[:6]}"
    streamed: list[str] = []
    with worker_process(agents, queue) as processes:
        async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS, task_queue=queue) as gw:

            async def progress(progress: float, total: float | None, message: str | None) -> None:
                streamed.append(message or "")
                if len(processes) == 1:
                    kill_and_replace(agents, queue, processes)

            async with (
                httpx2.AsyncClient(headers=auth(ALICE), timeout=httpx2.Timeout(30.0, read=180.0)) as http,
                Client(streamable_http_client(f"{gw.url}/mcp", http_client=http)) as client,
            ):
                result = await client.call_tool(
                    "ask", {"query": "Add 2 and 3", "wait_s": 150}, progress_callback=progress
                )
    assert len(processes) == 2
    assert result.structured_content is not None
    assert result.structured_content["status"] == "completed", result.structured_content
    assert result.structured_content["answer"] == ANSWER
    assert streamed


async def test_a_gateway_gone_mid_stream_resubscribe_gets_every_update_and_the_answer_once(
    agents: AgentTestEnvironment,
) -> None:
    seen: list[StreamResponse] = []
    async with AsyncExitStack() as clients:
        async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as first:
            alice = await clients.enter_async_context(a2a_client(first, "default", ALICE))
            stream = alice.send_message(a2a_message("Add 2 and 3, slowly"))
            async for event in stream:
                seen.append(event)
                if is_answer_delta(event):
                    break
        # The gateway is gone mid answer (its context, hub and connections with it).
        with pytest.raises(Exception):  # noqa: B017 - whatever the transport says of a dead server
            await alice.get_task(GetTaskRequest(id=seen[0].task.id))
    task_id = seen[0].task.id
    async with (
        running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as second,
        a2a_client(second, "default", ALICE) as again,
    ):
        events = [e async for e in again.subscribe(SubscribeToTaskRequest(id=task_id))]
    assert events[0].task.id == task_id
    assert final_task(events).status.state == TaskState.TASK_STATE_COMPLETED
    assert answers(events) == [ANSWER]
    run_steps = steps(events)
    for kind in ("request_started", "tool_started", "tool_completed"):
        assert run_steps.count(kind) == 1, run_steps
    assert set(steps(seen)) <= set(run_steps)  # everything the first stream showed, again
    assert ANSWER.startswith(texts_of(seen)[:8])
