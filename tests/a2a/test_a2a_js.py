"""One full streamed A2A task through the official JavaScript client (`@a2a-js/sdk`, tests/js), run by node.

The script (tests/js/a2a_stream.mjs) creates its client from the agent card, streams one task,
then reads it back with `getTask`; it prints what it saw as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import ALICE, TEST_TOKENS, GatewayServer, running_gateway

JS = Path(__file__).resolve().parents[1] / "js"
ANSWER = "Hello, JavaScript: this answer streams in small pieces."
AGENTS = {
    "default": scripted_agent(
        answer(ANSWER).model_copy(update={"chunk_chars": 6, "chunk_delay_s": 0.03}),
        stream=True,
        stream_interval_s=0.05,
    )
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as server:
        yield server


async def run_node(script: str, *args: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@a2a-js" / "sdk").is_dir():
        pytest.fail("node and tests/js/node_modules are needed: `cd tests/js && npm ci`")
    process = await asyncio.create_subprocess_exec(
        node, str(JS / script), *args, cwd=JS, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_the_js_client_streams_one_full_task(gw: GatewayServer) -> None:
    seen = await run_node("a2a_stream.mjs", f"{gw.url}/a2a/default", ALICE, "Say hello to JavaScript")
    assert seen["kinds"][0] == "task"
    assert "statusUpdate" in seen["kinds"] and "artifactUpdate" in seen["kinds"]
    assert seen["text"] == ANSWER
    assert seen["answer"] == ANSWER
    completed = 3  # TASK_STATE_COMPLETED in the protocol's enum
    assert seen["state"] == completed and seen["getState"] == completed
    assert seen["artifacts"] == 1
