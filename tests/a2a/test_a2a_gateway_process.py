"""`python gateway.py` killed with SIGKILL in the middle of an A2A stream, and started again.

The worker is the real `worker.py` and the gateway the real `gateway.py` (each its own process,
as a user runs them). The client, the official `a2a-sdk` one, loses its stream when the gateway
dies; once a new `gateway.py` listens on the same address, its resubscribe gets the task from
the start: every status update of the run, the answer artifact once, and `completed`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import AgentCard, StreamResponse, SubscribeToTaskRequest, TaskState
from google.protobuf.json_format import ParseDict

from testing import AgentTestEnvironment
from tests.a2a_helpers import answers, final_task, is_answer_delta, steps, texts_of
from tests.a2a_helpers import message as a2a_message
from tests.gateway_agents import SLOW_ANSWER
from tests.gateway_helpers import ALICE, TEST_TOKENS, auth
from tests.helpers import spawn_gateway, spawn_worker
from tests.s3_server import free_port

READY_WAIT_S = 60.0


@asynccontextmanager
async def gateway_process(
    address: str, queue: str, port: int, log: Path
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """`python gateway.py` on `port` with the test agents and tokens, once it answers `/readyz`."""
    env = {**os.environ, "REACT_GATEWAY_TOKENS": TEST_TOKENS, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = ("--agents", "tests.gateway_agents", "--log-level", "warning")
    process = spawn_gateway(address, queue, port, *args, log=log, env=env)
    try:
        async with httpx.AsyncClient(timeout=2) as http, asyncio.timeout(READY_WAIT_S):
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=20)


async def test_a_gateway_process_killed_mid_stream_resubscribe_through_its_successor_gets_it_all(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    address = agents.client.service_client.config.target_host
    queue = f"a2a-gateway-kill-{uuid.uuid4().hex[:6]}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    worker = spawn_worker(address, queue)
    seen: list[StreamResponse] = []
    try:
        async with httpx.AsyncClient(headers=auth(ALICE), timeout=60) as http:
            async with gateway_process(address, queue, port, tmp_path / "first.log") as first:
                card_json = (await http.get(f"{url}/a2a/default/.well-known/agent-card.json")).json()
                card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
                alice = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
                broke: Exception | None = None
                try:
                    async for event in alice.send_message(a2a_message("Add 2 and 3, slowly")):
                        seen.append(event)
                        if is_answer_delta(event) and first.poll() is None:
                            first.send_signal(signal.SIGKILL)  # mid answer: the stream is cut
                            first.wait(timeout=10)
                except Exception as error:  # whatever the transport says of a dead server
                    broke = error
                assert broke is not None, "the stream outlived its gateway"
            task_id = seen[0].task.id
            async with gateway_process(address, queue, port, tmp_path / "second.log"):
                events = [e async for e in alice.subscribe(SubscribeToTaskRequest(id=task_id))]
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    assert first.returncode == -signal.SIGKILL
    assert events[0].task.id == task_id
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING  # the run outlived the gateway
    assert final_task(events).status.state == TaskState.TASK_STATE_COMPLETED
    assert answers(events) == [SLOW_ANSWER]
    run_steps = steps(events)
    for kind in ("request_started", "tool_started", "tool_completed"):
        assert run_steps.count(kind) == 1, run_steps
    assert set(steps(seen)) <= set(run_steps)
    assert texts_of(seen) and SLOW_ANSWER.startswith(texts_of(seen))
    assert texts_of(events) == SLOW_ANSWER  # every delta again, from the run's start
