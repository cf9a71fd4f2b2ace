"""The official AG-UI JavaScript client (`@ag-ui/client` HttpAgent, tests/js) against a real gateway.

node runs tests/js/agui_client.mjs with the gateway's address; the packages come from
tests/js/package-lock.json (`npm ci`, run by scripts/setup.sh, or here when they are missing).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.gateway_helpers import ALICE, GatewayServer, installed_js_clients, module_gateway

JS = Path(__file__).resolve().parents[1] / "js"
SLOW_ANSWER = "A slow answer " * 20


gateway = module_gateway()


@pytest.fixture(scope="module")
def js_clients() -> Path:
    """tests/js with its node_modules installed from the lock file."""
    return installed_js_clients()


async def _scenario(gateway: GatewayServer, folder: Path, name: str, **env: str) -> dict[str, Any]:
    thread = f"js-{uuid.uuid4().hex[:10]}"
    environment = {
        **os.environ,
        "GATEWAY_URL": gateway.url,
        "GATEWAY_TOKEN": ALICE,
        "THREAD_ID": thread,
        "SUPPRESS_TRANSFORMATION_WARNINGS": "true",
        **env,
    }
    process = await asyncio.create_subprocess_exec(
        "node",
        "agui_client.mjs",
        name,
        cwd=folder,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_httpagent_runs_a_full_streamed_run(gateway: GatewayServer, js_clients: Path) -> None:
    seen = await _scenario(gateway, js_clients, "full")
    assert seen["runId"] == "js-full-1"
    assert seen["types"][0] == "RUN_STARTED" and seen["types"][-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_CONTENT" in seen["types"]
    assert seen["text"] == seen["result"] == "Hello from the gateway, streamed in small pieces."
    assert seen["messages"] == ["user", "assistant"]


async def test_httpagent_is_interrupted_for_an_approval_then_resumes(
    gateway: GatewayServer, js_clients: Path
) -> None:
    seen = await _scenario(gateway, js_clients, "approval")
    assert seen["outcome"]["type"] == "interrupt"
    assert seen["interrupts"] == [
        {
            "id": "call-calc",
            "toolCallId": "call-calc",
            "metadata": {
                "tool": "calculator",
                "arguments": {"expression": "17 * 23"},
                "arguments_truncated": False,
            },
        }
    ]
    first = seen["firstTypes"]
    assert first.index("TOOL_CALL_START") < first.index("MESSAGES_SNAPSHOT") < first.index("RUN_FINISHED")
    assert seen["secondTypes"][0] == "RUN_STARTED" and seen["secondTypes"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_START" not in seen["secondTypes"], "the resumed run continues after the interrupt"
    assert len(seen["toolResults"]) == 1 and "391" in seen["toolResults"][0]
    assert seen["text"] == seen["result"] == "17 * 23 = 391."
    assert seen["pendingAfter"] == 0


async def test_a_dropped_stream_resumes_by_event_id(gateway: GatewayServer, js_clients: Path) -> None:
    seen = await _scenario(gateway, js_clients, "reconnect", CUT_AFTER="8")
    assert seen["firstTypes"][0] == "RUN_STARTED" and "RUN_FINISHED" not in seen["firstTypes"]
    assert seen["lastId"]
    assert "RUN_STARTED" not in seen["restTypes"], "a reconnect continues right after the event"
    assert seen["restTypes"][-1] == "RUN_FINISHED"
    assert seen["text"] == SLOW_ANSWER, "nothing duplicated, nothing missing"
