"""The audit trail: one JSON line per state-changing call, refusal or denied token; no text, no token.

Asks, approvals refused for a scope, forks, resets, a denied token and a rate-limited request
each write one line on the `react.audit` logger with time, principal, action, target, outcome,
status and request id (the caller's `X-Request-Id`, echoed on the response); reads write none;
no line holds a message's text or a token.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from gateway.identity.audit import AUDIT_LOGGER
from gateway.identity.settings import IdentitySettings, QuotaSettings
from testing import AgentTestEnvironment
from tests.gateway_helpers import GatewayServer, run_input, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

FULL = "frank-full-0123456789"
ASK_ONLY = "frank-ask-0123456789"
TOKENS = f"{FULL}=frank,{ASK_ONLY}=frank:agents:ask"
SECRET_TEXT = "the-message-text-never-logged"
PER_MINUTE = 12


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    identity = IdentitySettings(quotas=QuotaSettings(requests_per_minute=PER_MINUTE))
    async with running_gateway(agents, tokens=TOKENS, identity=identity) as server:
        yield server


def _lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER]


async def test_state_changes_refusals_and_denied_tokens_are_audited(
    gw: GatewayServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    thread = f"audit-{uuid.uuid4().hex[:6]}"
    async with gw.http(FULL) as http:
        asked = await http.post(
            "/agui/default",
            json=run_input(thread, f"{thread}-r1", SECRET_TEXT),
            headers={"X-Request-Id": "req-42"},
        )
        assert asked.status_code == 200 and asked.headers["x-request-id"] == "req-42"
        assert (await http.get("/api/threads")).status_code == 200  # a read: no line
        assert (await http.post(f"/api/threads/default/{thread}/fork", json={})).status_code == 200
        assert (await http.post(f"/api/threads/default/{thread}/reset", json={})).status_code == 200
    async with gw.http(ASK_ONLY) as http:
        resume = run_input(thread, f"{thread}-r2", None, resume=[{"interruptId": "c", "status": "resolved"}])
        assert (await http.post("/agui/default", json=resume)).status_code == 403
    async with gw.http("not-a-known-token") as http:
        assert (await http.get("/api/threads")).status_code == 401

    lines = _lines(caplog)
    seen = [(line["principal"], line["action"], line["outcome"]) for line in lines]
    assert seen == [
        ("frank", "ask", "accepted"),
        ("frank", "fork", "accepted"),
        ("frank", "reset", "accepted"),
        ("frank", "approve", "refused"),
        (None, "authenticate", "denied"),
    ]
    ask, fork, _, approve, denied = lines
    assert (
        ask["target"] == f"default/{thread}/{thread}-r1"
        and ask["request_id"] == "req-42"
        and ask["status"] == 200
    )
    assert fork["target"] == f"default/{thread}"
    assert approve["code"] == "forbidden" and approve["status"] == 403
    assert (
        denied["reason"] == "unknown_token" and denied["target"] == "/api/threads" and denied["status"] == 401
    )
    for line in lines:
        assert {"time", "principal", "action", "target", "outcome", "status", "request_id"} <= set(line)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == AUDIT_LOGGER)
    for secret in (SECRET_TEXT, FULL, ASK_ONLY, "not-a-known-token"):
        assert secret not in text


async def test_a_rate_limited_request_is_audited(gw: GatewayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    async with gw.http(ASK_ONLY) as http:
        statuses: list[int] = []
        while 429 not in statuses and len(statuses) <= 2 * PER_MINUTE:  # a minute's worth, and some refill
            statuses.append((await http.get("/api/agents")).status_code)
    assert statuses[-1] == 429, statuses
    limited = [line for line in _lines(caplog) if line.get("code") == "rate_limited"]
    assert len(limited) == statuses.count(429)  # one line per refusal
    for line in limited:
        assert line["principal"] == "frank" and line["outcome"] == "refused" and line["status"] == 429
