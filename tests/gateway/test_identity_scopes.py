"""Scopes decide what a token may do, checked in the guard for every protocol (403 `forbidden`).

Two static tokens of the same principal: one with every default scope, one with `agents:ask`
only. The narrow one asks and reads its threads, but its approvals are refused by name over
AG-UI (`resume`), MCP (the `approve` tool: HTTP 403 with `error="insufficient_scope"`) and A2A
(a data part `{"approved": ...}` on the task); an approve-only token cannot ask; schedules and
the admin routes need their own scopes. Behind the guard, the request core checks the approval
scope once more for every protocol (`RequestCore.approve`). A refused call changes nothing: the
run still waits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from gateway.core import Decision, RequestCore, open_thread
from gateway.errors import GatewayError
from gateway.identity.principal import Principal
from gateway.identity.scopes import ASK, scopes_of_claims
from testing import AgentTestEnvironment
from tests.gateway_helpers import GatewayServer, agui_run, run_input, running_gateway

pytestmark = pytest.mark.asyncio(loop_scope="session")

FULL = "alice-full-0123456789"
ASK_ONLY = "alice-ask-0123456789"
APPROVE_ONLY = "alice-approve-0123456789"
ADMIN = "root-admin-0123456789"
TOKENS = (
    f"{FULL}=alice,{ASK_ONLY}=alice:agents:ask,{APPROVE_ONLY}=alice:agents:approve,{ADMIN}=root:agents:admin"
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, tokens=TOKENS) as server:
        yield server


async def test_scopes_come_from_scope_or_scp() -> None:
    assert scopes_of_claims({"scope": "openid agents:ask  agents:approve"}) == {
        "openid",
        "agents:ask",
        "agents:approve",
    }
    assert scopes_of_claims({"scp": ["agents:ask", 7, ""]}) == {"agents:ask"}
    assert scopes_of_claims({"scope": 42, "scp": {"a": 1}}) == frozenset()


async def _interrupted(gw: GatewayServer, thread: str) -> None:
    async with gw.http(ASK_ONLY) as http:
        events = await agui_run(http, run_input(thread, f"{thread}-r1", "What is 17 * 23?"), agent="approver")
    finished = events[-1]
    assert finished.type == "RUN_FINISHED" and finished.event["outcome"]["type"] == "interrupt", finished


def _resume(thread: str) -> dict[str, object]:
    entry = {"interruptId": "call-calc", "status": "resolved", "payload": {"approved": True}}
    return run_input(thread, f"{thread}-r2", None, resume=[entry])


async def test_an_ask_only_token_asks_but_cannot_approve_over_agui(gw: GatewayServer) -> None:
    thread = f"scoped-{uuid.uuid4().hex[:6]}"
    await _interrupted(gw, thread)
    async with gw.http(ASK_ONLY) as http:
        refused = await http.post("/agui/approver", json=_resume(thread))
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "forbidden"
        assert "agents:approve" in refused.json()["error"]["message"]
        assert (
            refused.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="agents:approve"'
        )
        # Nothing changed: the call still awaits approval.
        state = (await http.get(f"/api/threads/approver/{thread}")).json()
        assert state["status"] == "running"
    async with gw.http(FULL) as http:
        events = await agui_run(http, _resume(thread), agent="approver")
    assert events[-1].type == "RUN_FINISHED" and "391" in str(events[-1].event.get("result"))


async def test_the_request_core_refuses_an_approval_without_the_approve_scope(gw: GatewayServer) -> None:
    thread = f"core-scoped-{uuid.uuid4().hex[:6]}"
    await _interrupted(gw, thread)
    core = RequestCore(gw.ctx)
    asker = await open_thread(gw.ctx, Principal("alice", frozenset({ASK})), "approver", thread)
    with pytest.raises(GatewayError) as refused:
        await core.controls.approve(asker, f"{thread}-r1", Decision(approved=True), approver="alice")
    assert (refused.value.status, refused.value.code) == (403, "forbidden")
    assert "agents:approve" in refused.value.message
    # Nothing changed: the call still awaits approval.
    record = await core.controls.running(asker, f"{thread}-r1")
    assert [p.call_id for p in await core.reads.pending(record.run_workflow_id)] == ["call-calc"]


async def test_an_approve_only_token_cannot_ask_read_or_fork(gw: GatewayServer) -> None:
    async with gw.http(APPROVE_ONLY) as http:
        for method, path, body in [
            ("POST", "/agui/default", run_input("approver-asks", "approver-asks-r1")),
            ("GET", "/api/threads", None),
            ("POST", "/api/threads/default/anything/fork", {}),
        ]:
            response = await http.request(method, path, json=body)
            assert response.status_code == 403, (path, response.text)
            assert "agents:ask" in response.json()["error"]["message"]


async def test_schedules_and_admin_need_their_scopes_before_any_route(gw: GatewayServer) -> None:
    async with gw.http(FULL) as http:
        admin = await http.get("/api/admin/threads")
        assert admin.status_code == 403 and "agents:admin" in admin.json()["error"]["message"]
    async with gw.http(ASK_ONLY) as http:
        schedules = await http.post("/api/schedules", json={})
        assert schedules.status_code == 403 and "agents:schedules" in schedules.json()["error"]["message"]


async def test_mcp_approve_is_refused_with_insufficient_scope_in_the_challenge(gw: GatewayServer) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "approve", "arguments": {"handle": "approver:x:y"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with gw.http(ASK_ONLY) as http:
        response = await http.post("/mcp", content=json.dumps(call), headers=headers)
    assert response.status_code == 403, response.text
    assert response.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="agents:approve"'
    assert response.json()["error"]["data"]["code"] == "forbidden"


async def test_a2a_approval_needs_the_approve_scope(gw: GatewayServer) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "taskId": "ctx:req",
                "role": "ROLE_USER",
                "parts": [{"data": {"approved": True}}],
            }
        },
    }
    async with gw.http(ASK_ONLY) as http:
        response = await http.post("/a2a/approver", json=request, headers={"A2A-Version": "1.0"})
    assert response.status_code == 403, response.text
    assert response.json()["error"]["data"]["code"] == "forbidden"
    assert "agents:approve" in response.json()["error"]["message"]


async def test_the_admin_scope_reads_every_principals_threads_and_changes_none(gw: GatewayServer) -> None:
    thread = f"admin-{uuid.uuid4().hex[:6]}"
    async with gw.http(FULL) as http:
        events = await agui_run(http, run_input(thread, f"{thread}-r1", "Hello"))
        assert events[-1].type == "RUN_FINISHED"
    async with gw.http(ADMIN) as http:
        listed = (await http.get("/api/admin/threads", params={"principal": "alice"})).json()["threads"]
        assert {"principal": "alice", "agent": "default", "thread_id": thread} in [
            {k: t[k] for k in ("principal", "agent", "thread_id")} for t in listed
        ]
        everyone = (await http.get("/api/admin/threads")).json()["threads"]
        assert thread in [t["thread_id"] for t in everyone]
        view = await http.get(f"/api/admin/threads/alice/default/{thread}")
        assert view.status_code == 200
        assert [m.get("content") for m in view.json()["messages"] if m.get("role") == "user"] == ["Hello"]
        # Reading is all: the admin (without agents:ask) cannot ask, and owns no thread of alice's.
        assert (await http.post("/agui/default", json=run_input(thread, f"{thread}-r2"))).status_code == 403
        assert (await http.get("/api/admin/threads/al ice/default/x")).status_code == 400
