"""Erasing a thread (`DELETE /api/threads/{agent}/{thread}`) through a real gateway, worker and dev server.

The session and its runs are gone from Temporal (describe: not found), the thread is 404 on every
route and absent from the listing, its forks are kept, a running thread is terminated first,
another principal's thread is the same 404 with nothing deleted, and `?memories=true` deletes the
memory items its requests wrote (only those). The same through the typed client, the CLI and the
MCP tool `delete_thread`. Erasing a principal (`DELETE /api/admin/principals/{principal}`, the
admin's) leaves nothing of theirs in Temporal (sessions, runs, schedules) nor in the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client as TemporalClient

from contracts.memory import MemoryConfig
from gateway.guard.operations import classify
from gateway.identity.audit import AUDIT_LOGGER
from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, auth, running_gateway
from tests.helpers import workflow_exists

NOT_FOUND = {"error": {"code": "not_found", "message": "no such thread"}}
ASK_ONLY = "dave-ask-0123456789"
ERIN = "erin-token-0123456789"
ROOT = "root-admin-0123456789"
REPO = Path(__file__).resolve().parents[2]
GONE_S = 30.0
MEMORY = MemoryConfig(tools=True, recall=0, namespace="erase-prefs")
AGENTS = {
    **TEST_AGENTS,
    "teller": scripted_agent(
        call_tools(tool_call("memory_save", {"text": "The user takes tea with lemon", "key": "erase-tea"})),
        answer("I will remember that."),
        memory=MEMORY,
    ),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    tokens = f"{TEST_TOKENS},{ASK_ONLY}=dave:agents:ask,{ERIN}=erin,{ROOT}=root:agents:admin"
    async with running_gateway(agents, AGENTS, tokens=tokens) as server:
        yield server


async def asked(gateway: GatewayServer, token: str, agent: str, thread: str, message: str) -> dict[str, Any]:
    """A background ask through the gateway, waited for until it ends (or awaits approval)."""
    async with gateway.http(token) as http:
        posted = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": message})
        assert posted.status_code == 202, posted.text
        request_id = posted.json()["request_id"]
        done = await http.get(f"/api/threads/{agent}/{thread}/requests/{request_id}", params={"wait_s": 30})
        body: dict[str, Any] = done.json()
        return body


async def all_gone(client: TemporalClient, workflow_ids: list[str]) -> None:
    """Every workflow of `workflow_ids` describes as not found (Temporal deletes asynchronously)."""
    async with asyncio.timeout(GONE_S):
        while True:
            left = [w for w in workflow_ids if await workflow_exists(client, w)]
            if not left:
                return
            await asyncio.sleep(0.1)


async def run_ids(gateway: GatewayServer, owner: str, agent: str, thread: str) -> list[str]:
    session = gateway.ctx.sessions.get(session_id(Principal(owner), agent, thread))
    return [record.run_workflow_id for record in await session.requests()]


async def listed_ids(gateway: GatewayServer, token: str) -> set[str]:
    async with gateway.http(token) as http:
        response = await http.get("/api/threads")
        assert response.status_code == 200, response.text
        return {t["thread_id"] for t in response.json()["threads"]}


def new_thread() -> str:
    return f"e-{uuid.uuid4().hex[:8]}"


async def test_erasing_an_idle_thread_deletes_its_session_and_runs_and_keeps_its_fork(
    gateway: GatewayServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    thread = new_thread()
    for message in ("First?", "Second?"):
        assert (await asked(gateway, ALICE, "default", thread, message))["status"] == "completed"
    runs = await run_ids(gateway, "alice", "default", thread)
    assert len(runs) == 2
    session = session_id(Principal("alice"), "default", thread)
    client = gateway.ctx.client
    async with gateway.http(ALICE) as http:
        forked = await http.post(f"/api/threads/default/{thread}/fork", json={"thread_id": f"{thread}-kept"})
        assert forked.status_code == 200, forked.text
        deleted = await http.delete(f"/api/threads/default/{thread}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {
            "agent": "default",
            "thread_id": thread,
            "session_id": session,
            "deleted": {"workflows": 3, "runs": 2, "executions": 3, "memories": None, "files": 0},
        }
        # The gateway answered once Temporal no longer describes nor lists the session.
        assert not await workflow_exists(client, session)
        assert thread not in await listed_ids(gateway, ALICE)
        await all_gone(client, runs)
        for method, path in [
            ("GET", f"/api/threads/default/{thread}"),
            ("POST", f"/api/threads/default/{thread}/fork"),
            ("POST", f"/api/threads/default/{thread}/reset"),
            ("DELETE", f"/api/threads/default/{thread}"),  # erasing twice: the second is 404
        ]:
            response = await http.request(method, path, json={} if method == "POST" else None)
            assert (response.status_code, response.json()) == (404, NOT_FOUND), (method, path)
        # The fork outlives its parent, whole: its thread still reads, and it still answers.
        kept = await http.get(f"/api/threads/default/{thread}-kept")
        assert kept.status_code == 200 and kept.json()["thread_length"] >= 1, kept.text
    assert (await asked(gateway, ALICE, "default", f"{thread}-kept", "Still here?"))["status"] == "completed"
    audited = [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER]
    erases = [
        (line["action"], line["target"], line["outcome"]) for line in audited if line["action"] == "erase"
    ]
    assert erases == [("erase", f"default/{thread}", "accepted"), ("erase", f"default/{thread}", "refused")]


async def test_erasing_a_running_thread_terminates_it_first(gateway: GatewayServer) -> None:
    thread = new_thread()
    waiting = await asked(gateway, ALICE, "approver", thread, "What is 17 * 23?")
    assert waiting["status"] == "awaiting_approval", waiting
    runs = await run_ids(gateway, "alice", "approver", thread)
    async with gateway.http(ALICE) as http:
        deleted = await http.delete(f"/api/threads/approver/{thread}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["deleted"]["runs"] == 1
        assert (await http.get(f"/api/threads/approver/{thread}")).status_code == 404
    await all_gone(gateway.ctx.client, [session_id(Principal("alice"), "approver", thread), *runs])


async def test_another_principals_thread_and_junk_ids_delete_nothing(gateway: GatewayServer) -> None:
    thread = new_thread()
    assert (await asked(gateway, ALICE, "default", thread, "Mine?"))["status"] == "completed"
    async with gateway.http(BOB) as bob, gateway.http(ALICE) as alice:
        for http, path in [
            (bob, f"/api/threads/default/{thread}"),
            (alice, "/api/threads/default/never-asked"),
        ]:
            response = await http.delete(path)
            assert (response.status_code, response.json()) == (404, NOT_FOUND), path
        for path, status, code in [
            (f"/api/threads/default/{thread}-run-1", 400, "invalid_input"),  # a run is never a thread
            ("/api/threads/default/bad%20id", 400, "invalid_input"),
            (f"/api/threads/nobody/{thread}", 404, "unknown_agent"),
            (f"/api/threads/default/{thread}?memories=maybe", 400, "invalid_input"),
        ]:
            response = await alice.delete(path)
            assert (response.status_code, response.json()["error"]["code"]) == (status, code), path
        # Nothing was deleted: the thread and its run are whole.
        details = await alice.get(f"/api/threads/default/{thread}")
        assert details.status_code == 200 and details.json()["thread_length"] == 2
    for run in await run_ids(gateway, "alice", "default", thread):
        assert await workflow_exists(gateway.ctx.client, run)


async def test_memories_true_deletes_the_items_its_requests_wrote_and_no_other(
    gateway: GatewayServer,
) -> None:
    thread = new_thread()
    async with gateway.http(ALICE) as http:
        put = await http.put("/api/memory/teller/items/erase-other", json={"text": "Lives in Lisbon"})
        assert put.status_code == 200, put.text
    assert (await asked(gateway, ALICE, "teller", thread, "I take tea with lemon."))["status"] == "completed"
    async with gateway.http(ASK_ONLY) as dave:  # memories=true needs memory:write
        refused = await dave.delete(f"/api/threads/teller/{thread}?memories=true")
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    async with gateway.http(ALICE) as http:
        assert (await http.get("/api/memory/teller/items/erase-tea")).status_code == 200
        deleted = await http.delete(f"/api/threads/teller/{thread}", params={"memories": "true"})
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["deleted"]["memories"] == 1
        assert (await http.get("/api/memory/teller/items/erase-tea")).status_code == 404
        assert (await http.get("/api/memory/teller/items/erase-other")).status_code == 200


def test_erase_is_one_operation_of_the_table() -> None:
    [operation] = classify("DELETE", "/api/threads/default/t-1", None)
    assert (operation.action, operation.scope, operation.target, operation.audited) == (
        "erase",
        "agents:ask",
        "default/t-1",
        True,
    )
    body = json.dumps(
        {"method": "tools/call", "params": {"name": "delete_thread", "arguments": {"session": "t-1"}}}
    ).encode()
    [tool] = classify("POST", "/mcp", body)
    assert (tool.action, tool.scope, tool.target, tool.audited) == (  # audited as the route's erase
        "erase",
        "agents:ask",
        "default/t-1",
        True,
    )


async def test_the_typed_client_deletes_a_session_and_its_runs(gateway: GatewayServer) -> None:
    thread = new_thread()
    assert (await asked(gateway, ALICE, "default", thread, "Typed?"))["status"] == "completed"
    runs = await run_ids(gateway, "alice", "default", thread)
    session = gateway.ctx.sessions.get(session_id(Principal("alice"), "default", thread))
    erased = await session.delete()
    assert (erased.runs, erased.workflows) == (runs, 2)
    await all_gone(gateway.ctx.client, [session.workflow_id, *runs])


async def test_the_cli_deletes_a_session(gateway: GatewayServer) -> None:
    thread = new_thread()
    assert (await asked(gateway, ALICE, "default", thread, "CLI?"))["status"] == "completed"
    runs = await run_ids(gateway, "alice", "default", thread)
    session = session_id(Principal("alice"), "default", thread)
    env = {**os.environ, "TEMPORAL_ADDRESS": gateway.ctx.client.service_client.config.target_host}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        "delete",
        session,
        "--yes",
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, output.decode()
    assert f"deleted {session}: 1 runs, 2 workflows" in output.decode()
    await all_gone(gateway.ctx.client, [session, *runs])
    again = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        "delete",
        session,
        "--yes",
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(again.communicate(), 120)
    assert again.returncode == 1 and "not_found" in output.decode(), output.decode()


async def test_the_mcp_tool_deletes_ones_own_session_only(gateway: GatewayServer) -> None:
    thread = new_thread()
    assert (await asked(gateway, ALICE, "default", thread, "MCP?"))["status"] == "completed"
    runs = await run_ids(gateway, "alice", "default", thread)

    async def call(token: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        async with (
            httpx2.AsyncClient(headers=auth(token), timeout=httpx2.Timeout(30.0, read=120.0)) as http,
            Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool("delete_thread", arguments)
        assert result.structured_content is not None
        return result.is_error, result.structured_content

    refused, body = await call(BOB, {"session": thread})
    assert refused and body["error"]["code"] == "not_found"
    ok, body = await call(ALICE, {"session": thread})
    assert not ok and body == {
        "session": thread,
        "agent": "default",
        "deleted": {"workflows": 2, "runs": 1, "executions": 2, "memories": None, "files": 0},
    }
    await all_gone(gateway.ctx.client, [session_id(Principal("alice"), "default", thread), *runs])
    again, body = await call(ALICE, {"session": thread})
    assert again and body["error"]["code"] == "not_found"


async def test_erasing_a_principal_leaves_nothing_of_theirs_and_keeps_everyone_elses(
    gateway: GatewayServer,
) -> None:
    threads = [new_thread(), new_thread()]
    for thread in threads:
        told = await asked(gateway, ERIN, "teller", thread, "I take tea with lemon.")
        assert told["status"] == "completed"
    kept = new_thread()
    assert (await asked(gateway, ALICE, "default", kept, "hello"))["status"] == "completed"
    runs = [run for thread in threads for run in await run_ids(gateway, "erin", "teller", thread)]
    sessions = [session_id(Principal("erin"), "teller", thread) for thread in threads]
    async with gateway.http(ERIN) as http:
        put = await http.put("/api/memory/default/items/erin-city", json={"text": "Lives in Porto"})
        assert put.status_code == 200, put.text
        made = await http.post("/api/schedules", json={"agent": "default", "message": "hi", "every_s": 3600})
        assert made.status_code == 201, made.text
        schedule = made.json()["schedule_id"]
        refused = await http.delete("/api/admin/principals/erin")  # erin is no admin
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    async with gateway.http(ROOT) as root:
        junk = await root.delete("/api/admin/principals/erin%0A")
        assert (junk.status_code, junk.json()["error"]["code"]) == (400, "invalid_input")
        erased = await root.delete("/api/admin/principals/erin")
        assert erased.status_code == 200, erased.text
        deleted = erased.json()["deleted"]
    assert (deleted["threads"], deleted["schedules"], deleted["memories"]) == (2, 1, 2), deleted
    await all_gone(gateway.ctx.client, [*sessions, *runs])
    async with gateway.http(ERIN) as http:
        assert await listed_ids(gateway, ERIN) == set()
        for thread in threads:
            assert (await http.get(f"/api/threads/teller/{thread}")).status_code == 404
        assert (await http.get("/api/memory/default/items/erin-city")).status_code == 404
        assert (await http.get("/api/memory/teller/items/erase-tea")).status_code == 404
        assert (await http.get(f"/api/schedules/{schedule}")).status_code == 404
    assert kept in await listed_ids(gateway, ALICE)  # another principal keeps everything
    async with gateway.http(ROOT) as root:  # erasing again finds nothing left
        again = await root.delete("/api/admin/principals/erin")
        assert again.status_code == 200, again.text
        assert again.json()["deleted"] == {
            "threads": 0,
            "schedules": 0,
            "workflows": 0,
            "memories": 0,
            "files": 0,
        }


def test_erasing_a_principal_is_an_audited_erase_of_the_admins() -> None:
    [operation] = classify("DELETE", "/api/admin/principals/erin", None)
    assert (operation.action, operation.scope, operation.target, operation.audited) == (
        "erase",
        "agents:admin",
        "erin",
        True,
    )
