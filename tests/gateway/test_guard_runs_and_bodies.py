"""The guard reads every protocol alike: AI SDK bodies, `HEAD`s, steering at the active-runs limit.

One principal (`gina`) with three tokens (every default scope, `agents:ask` only,
`agents:approve` only) on a gateway whose active-runs limit is 1. A request of hers waits for
approval (her one active run). Then:

- the AI SDK's decisions are an approval: the ask-only token is refused 403 naming
  `agents:approve` before any stream; the approve-only token decides, past the limit (deciding an
  existing request starts no run), and the audit line says `approve` on `<agent>/<thread>/<request>`;
- steering her running request (`on_busy: "steer"`) over AG-UI and the AI SDK is accepted at the
  limit, as over A2A and MCP; the same steering ask on an idle thread starts a run, and is 429;
- `HEAD` on the AG-UI events route and the AI SDK resume route needs `agents:ask`, as `GET` does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from gateway.identity.audit import AUDIT_LOGGER
from gateway.identity.settings import IdentitySettings, QuotaSettings
from testing import AgentTestEnvironment
from tests.gateway_helpers import GatewayServer, read_sse, run_input, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

FULL = "gina-full-0123456789"
ASK_ONLY = "gina-ask-0123456789"
APPROVE_ONLY = "gina-approve-0123456789"
TOKENS = f"{FULL}=gina,{ASK_ONLY}=gina:agents:ask,{APPROVE_ONLY}=gina:agents:approve"
RUNNING = "WorkflowId STARTS_WITH 'gw/gina/' AND ExecutionStatus = 'Running' AND WorkflowType = 'ReActRun'"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    identity = IdentitySettings(quotas=QuotaSettings(max_active_per_principal=1))
    async with running_gateway(agents, tokens=TOKENS, identity=identity) as server:
        yield server


def _ask_body(chat: str, message_id: str, text: str = "What is 17 * 23?", **extra: Any) -> dict[str, Any]:
    message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat, "messages": [message], "trigger": "submit-message", **extra}


def _decision_body(chat: str, request_id: str) -> dict[str, Any]:
    part = {
        "type": "tool-calculator",
        "toolCallId": "call-calc",
        "state": "approval-responded",
        "approval": {"id": "call-calc", "approved": True},
    }
    message = {"id": f"{request_id}:answer", "role": "assistant", "parts": [part]}
    return {"id": chat, "messages": [message], "trigger": "submit-message"}


async def _chunks(response: httpx.Response, stop_after: int | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    async for line in response.aiter_lines():
        if line.startswith("data:") and line != "data: [DONE]":
            found.append(json.loads(line[5:]))
            if stop_after is not None and len(found) >= stop_after:
                break
    return found


async def _until_running(agents: AgentTestEnvironment, wanted: int, timeout_s: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (await agents.client.count_workflows(RUNNING)).count != wanted:
        assert asyncio.get_running_loop().time() < deadline, f"{wanted} running runs not counted"
        await asyncio.sleep(0.05)


async def _waiting_request(gw: GatewayServer, agents: AgentTestEnvironment, chat: str) -> None:
    """Ask the approver agent over the AI SDK: the request waits for a decision (gina's one run)."""
    async with (
        gw.http(FULL) as http,
        http.stream("POST", "/ai-sdk/approver", json=_ask_body(chat, f"{chat}-r1")) as response,
    ):
        assert response.status_code == 200
        chunks = await _chunks(response)
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}, chunks
    await _until_running(agents, 1)


async def test_ai_sdk_decisions_and_steering_at_the_limit(
    gw: GatewayServer, agents: AgentTestEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    chat = f"guard-{uuid.uuid4().hex[:6]}"
    await _waiting_request(gw, agents, chat)
    request_id = f"{chat}-r1"

    async with gw.http(ASK_ONLY) as http:  # an ask-only token's decisions: refused before any stream
        refused = await http.post("/ai-sdk/approver", json=_decision_body(chat, request_id))
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "forbidden" and "agents:approve" in refused.text
    assert refused.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="agents:approve"'

    async with gw.http(FULL) as http:
        # Steering her running request is no new run: accepted at the limit, over the AI SDK ...
        steer = _ask_body(chat, f"{chat}-s1", "Be brief.", on_busy="steer")
        async with http.stream("POST", "/ai-sdk/approver", json=steer) as response:
            assert response.status_code == 200, await response.aread()
            [start] = await _chunks(response, stop_after=1)
        assert start["messageMetadata"]["disposition"] == "steered", start
        # ... and over AG-UI.
        body = run_input(chat, f"{chat}-s2", "Briefer.", forwardedProps={"on_busy": "steer"})
        async with http.stream("POST", "/agui/approver", json=body) as response:
            assert response.status_code == 200, await response.aread()
            events = await read_sse(response, stop_after=2)
        assert events[1].event["name"] == "ask" and events[1].event["value"]["disposition"] == "steered"
        # A steering ask on a thread that runs nothing would start a run: held back by the limit.
        idle = run_input(f"{chat}-idle", f"{chat}-i1", "Hi", forwardedProps={"on_busy": "steer"})
        held = await http.post("/agui/approver", json=idle)
        assert held.status_code == 429 and held.json()["error"]["code"] == "quota_exceeded", held.text

    async with (
        gw.http(APPROVE_ONLY) as http,  # an approve-only token decides, past the limit
        http.stream("POST", "/ai-sdk/approver", json=_decision_body(chat, request_id)) as response,
    ):
        assert response.status_code == 200, await response.aread()
        chunks = await _chunks(response)
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}, chunks
    assert "391" in "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta")

    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER]
    seen = [(line["action"], line["target"], line["outcome"]) for line in lines]
    assert seen == [
        ("ask", f"approver/{chat}/{request_id}", "accepted"),
        ("approve", f"approver/{chat}/{request_id}", "refused"),
        ("ask", f"approver/{chat}/{chat}-s1", "accepted"),
        ("ask", f"approver/{chat}/{chat}-s2", "accepted"),
        ("ask", f"approver/{chat}-idle/{chat}-i1", "refused"),
        ("approve", f"approver/{chat}/{request_id}", "accepted"),
    ]


async def test_head_needs_the_scope_get_needs(gw: GatewayServer) -> None:
    async with gw.http(APPROVE_ONLY) as http:
        for path in ("/agui/default/threads/any/events", "/ai-sdk/default/any/stream"):
            assert (await http.get(path)).status_code == 403, path
            head = await http.head(path)
            assert head.status_code == 403, path
            assert head.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="agents:ask"'
    async with gw.http(ASK_ONLY) as http:
        assert (await http.head("/ai-sdk/default/nothing-runs/stream")).status_code == 404
