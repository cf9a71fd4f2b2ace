"""The gateway's guards on a real uvicorn server: health, tokens, owners' 404, body limit, bad JSON, CORS.

Settings and owners' id encoding are checked as plain functions; everything else goes through HTTP.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import time
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from contracts.workflow_ids import MAX_SESSION_ID_CHARS, workflow_id_problem
from gateway.app import build_app
from gateway.errors import GatewayError
from gateway.identity.principal import Principal
from gateway.owners import parse_session_id, session_id
from gateway.settings import GatewaySettings, load_settings, parse_tokens
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, auth, running_gateway


def test_tokens_come_as_pairs_or_from_a_file(tmp_path: Path) -> None:
    assert dict(parse_tokens("abcdefgh1=alice, abcdefgh2=bob")) == {"abcdefgh1": "alice", "abcdefgh2": "bob"}
    file = tmp_path / "tokens"
    file.write_text("# ops\nabcdefgh1=alice\n\nabcdefgh2 = bob\n")
    assert dict(parse_tokens(f"@{file}")) == {"abcdefgh1": "alice", "abcdefgh2": "bob"}
    for bad in (
        "abcdefgh1",
        "short=alice",
        "abcdefgh1=al ice",
        "abcdefgh1=a,abcdefgh1=b",
        f"@{tmp_path}/none",
    ):
        with pytest.raises(SettingsError):
            parse_tokens(bad)


def test_without_tokens_the_gateway_listens_on_loopback_only() -> None:
    agents = {"default": GatewaySettings().agents["default"]}
    with pytest.raises(SettingsError, match="without tokens"):
        load_settings(host="0.0.0.0", environ={}, agents=agents)
    assert load_settings(host="::1", environ={}, agents=agents).host == "::1"
    tokens = {"REACT_GATEWAY_TOKENS": "abcdefgh1=alice"}
    assert load_settings(host="0.0.0.0", environ=tokens, agents=agents).tokens == {"abcdefgh1": "alice"}


def test_owners_live_in_the_session_id() -> None:
    alice, bob = Principal("alice"), Principal("bob")
    sid = session_id(alice, "default", "t-1")
    assert sid == "gw/alice/default/t-1"
    assert parse_session_id(alice, sid) == ("default", "t-1")
    assert parse_session_id(alice, sid + "-fork-2") == ("default", "t-1-fork-2")
    assert parse_session_id(bob, sid) is None
    assert parse_session_id(alice, "agent-t-1") is None
    # A session's run is not a session; a fork id cut to fit (`contracts.workflow_ids`) stays its owner's.
    assert parse_session_id(alice, sid + "-run-1") is None
    cut = f"{sid}-fork-1-fo~{'0123456789abcdef'}-fork-9"
    assert parse_session_id(alice, cut) == ("default", cut.removeprefix("gw/alice/default/"))
    longest = session_id(Principal("p" * 32), "a" * 32, "t" * 100)
    assert len(longest) <= MAX_SESSION_ID_CHARS and workflow_id_problem(longest, "id") is None
    for bad in ("", "-x", "a/b", "a" * 101, "a b", "t-run-3"):
        with pytest.raises(GatewayError) as caught:
            session_id(alice, "default", bad)
        assert (caught.value.status, caught.value.code) == (400, "invalid_input")


async def _ready_within(http: httpx.AsyncClient, seconds: float) -> bool:
    """Whether `/readyz` says ready within `seconds`: a loaded dev server may miss one 3 s probe."""
    deadline = time.monotonic() + seconds
    while True:
        response = await http.get("/readyz")
        if response.json() == {"status": "ready"}:
            return response.status_code == 200
        assert (response.status_code, response.json()) == (503, {"status": "unavailable"})
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.5)


async def test_health_readiness_and_tokens(agents: AgentTestEnvironment) -> None:
    async with running_gateway(agents, tokens=TEST_TOKENS) as gw, gw.http() as http:
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        assert await _ready_within(http, 30.0)
        for headers in ({}, {"Authorization": "Bearer wrong-token-123"}, {"Authorization": ALICE}):
            response = await http.post("/agui/default", json={}, headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "unauthorized"
            assert response.headers["www-authenticate"] == "Bearer"
        missing = await http.get("/no/such/endpoint", headers=auth(BOB))
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


async def test_a_gateway_whose_temporal_does_not_answer_is_not_ready_and_says_why_in_its_log(
    agents: AgentTestEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as closed:  # a port nothing listens on once this block ends
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
    nowhere = await Client.connect(address, lazy=True)
    async with running_gateway(agents) as gw:
        app = build_app(dataclasses.replace(gw.ctx, client=nowhere))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
            with caplog.at_level(logging.WARNING, logger="gateway.app"):
                response = await http.get("/readyz")
            assert (await http.get("/healthz")).json() == {"status": "ok"}  # the process still answers
    assert (response.status_code, response.json()) == (503, {"status": "unavailable"})
    assert any("not ready: Temporal did not answer" in r.getMessage() for r in caplog.records)


async def test_body_limit_bad_json_and_cors(agents: AgentTestEnvironment) -> None:
    origin = "https://app.example.com"
    async with running_gateway(agents, max_body_bytes=4096, cors_origins=(origin,)) as gw, gw.http() as http:
        plain = "/api/threads/default/t1/requests"  # a route that carries no attachments
        big = await http.post(plain, content=b"{" + b" " * 5000 + b"}")
        assert (big.status_code, big.json()["error"]["code"]) == (413, "payload_too_large")
        assert "4,096 bytes" in big.json()["error"]["message"]
        # A route that carries attachments takes more (`attachment_body_bytes`): this body is read, and
        # refused for what it is, not for its size.
        taken = await http.post("/agui/default", content=b"{" + b" " * 5000 + b"}")
        assert (taken.status_code, taken.json()["error"]["code"]) == (400, "invalid_input")

        async def chunks():  # no content-length: the limit counts the bytes as they arrive
            for _ in range(10):
                yield b" " * 1000

        streamed = await http.post(plain, content=chunks())
        assert (streamed.status_code, streamed.json()["error"]["code"]) == (413, "payload_too_large")
        preflight = {"Origin": origin, "Access-Control-Request-Method": "POST"}
        allowed = await http.options("/agui/default", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == origin
        denied = await http.options("/agui/default", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in denied.headers
