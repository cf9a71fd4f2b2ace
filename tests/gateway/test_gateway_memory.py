"""`/api/memory` and agents that remember, through a real gateway, the tests' worker and the store.

Two agents share one memory namespace (`prefs`): `teller` saves what it is told, `finder` is
given it by recall and searches for it, each in a thread of its own. The gateway and the worker
share the test session's SQLite store (`REACT_STORE_URL`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from contracts.memory import MemoryConfig
from gateway.guard.operations import classify
from gateway.identity.scopes import MEMORY_READ, MEMORY_WRITE
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, running_gateway

READER = "reader-token-0123456789"
MEMORY = MemoryConfig(tools=True, recall=3, namespace="prefs")
AGENTS = {
    **TEST_AGENTS,
    "teller": scripted_agent(
        call_tools(tool_call("memory_save", {"text": "The user prefers oat milk in coffee", "key": "milk"})),
        answer("I will remember that."),
        memory=MEMORY,
    ),
    "finder": scripted_agent(
        call_tools(tool_call("memory_search", {"query": "milk"})), answer("Oat milk."), memory=MEMORY
    ),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    tokens = f"{TEST_TOKENS},{READER}=carol:memory:read"
    async with running_gateway(agents, AGENTS, tokens=tokens) as server:
        yield server


async def ask(gateway: GatewayServer, token: str, agent: str, thread: str, message: str) -> dict[str, Any]:
    async with gateway.http(token) as http:
        posted = await http.post(f"/api/threads/{agent}/{thread}/requests", json={"message": message})
        assert posted.status_code == 202, posted.text
        request_id = posted.json()["request_id"]
        done = await http.get(f"/api/threads/{agent}/{thread}/requests/{request_id}", params={"wait_s": 30})
        body: dict[str, Any] = done.json()
        assert body["status"] == "completed", body
        return body


async def test_a_preference_told_in_one_thread_is_used_in_another(gateway: GatewayServer) -> None:
    await ask(gateway, ALICE, "teller", f"t-{uuid.uuid4().hex[:8]}", "I like oat milk in my coffee.")
    thread = f"t-{uuid.uuid4().hex[:8]}"
    assert (await ask(gateway, ALICE, "finder", thread, "What milk do I take?"))["answer"] == "Oat milk."
    session = gateway.ctx.sessions.get(f"gw/alice/finder/{thread}")
    record = (await session.requests())[-1]
    assert record.run_workflow_id is not None
    trace = await gateway.ctx.runs.get(record.run_workflow_id).trace()
    assert [e.data for e in trace.events if e.kind == "memory_recalled"] == [{"keys": ["milk"]}]
    found = [e.data["outcome"] for e in trace.events if e.kind == "tool_completed"]
    assert "oat milk" in str(found[0])
    async with gateway.http(ALICE) as http:
        searched = (await http.get("/api/memory/finder", params={"q": "coffee milk"})).json()
        assert [item["key"] for item in searched["items"]] == ["milk"]
    async with gateway.http(BOB) as http:  # bob's memory of the same agents holds nothing of alice's
        assert (await http.get("/api/memory/finder", params={"q": "milk"})).json() == {"items": []}
        assert (await http.get("/api/memory/teller/items/milk")).status_code == 404


async def test_put_get_list_delete_and_refusals_by_name(gateway: GatewayServer) -> None:
    async with gateway.http(BOB) as http:
        put = await http.put("/api/memory/default/items/tz", json={"text": "Lives in UTC+1", "ttl_s": 3600})
        assert put.status_code == 200, put.text
        item = put.json()
        assert set(item) == {"key", "text", "created_at", "updated_at", "expires_at"}
        got = (await http.get("/api/memory/default/items/tz")).json()
        assert (got["text"], got["expires_at"]) == ("Lives in UTC+1", item["expires_at"])
        with_value = await http.put(
            "/api/memory/default/items/lang", json={"text": "Speaks Dutch", "value": {"lang": "nl"}}
        )
        assert with_value.json()["value"] == {"lang": "nl"}
        listed = (await http.get("/api/memory/default")).json()
        assert [i["key"] for i in listed["items"]] == ["lang", "tz"]
        dutch = await http.get("/api/memory/default", params={"q": "speaks", "filter": '{"lang": "nl"}'})
        assert [i["key"] for i in dutch.json()["items"]] == ["lang"]
        french = await http.get("/api/memory/default", params={"q": "speaks", "filter": '{"lang": "fr"}'})
        assert french.json()["items"] == []
        assert (await http.get("/api/memory/default", params={"limit": 1})).json()["next_cursor"]

        refusals = {
            "empty text": await http.put("/api/memory/default/items/k", json={"text": ""}),
            "bad key": await http.put("/api/memory/default/items/bad%20key", json={"text": "x"}),
            "ttl range": await http.put("/api/memory/default/items/k", json={"text": "x", "ttl_s": 0}),
            "unknown field": await http.put("/api/memory/default/items/k", json={"text": "x", "ttl": 5}),
            "too long": await http.put("/api/memory/default/items/k", json={"text": "x" * 5000}),
            "limit type": await http.get("/api/memory/default", params={"q": "x", "limit": "many"}),
            "filter json": await http.get("/api/memory/default", params={"q": "x", "filter": "{lang"}),
            "filter field": await http.get("/api/memory/default", params={"q": "x", "filter": '{"a b": 1}'}),
            "filter alone": await http.get("/api/memory/default", params={"filter": '{"lang": "nl"}'}),
        }
        assert {name: r.status_code for name, r in refusals.items()} == {
            "empty text": 400,
            "bad key": 400,
            "ttl range": 400,
            "unknown field": 400,
            "too long": 413,
            "limit type": 400,
            "filter json": 400,
            "filter field": 400,
            "filter alone": 400,
        }
        assert refusals["ttl range"].json()["error"]["code"] == "invalid_input"
        assert "ttl_s" in refusals["ttl range"].json()["error"]["message"]
        assert (await http.get("/api/memory/default/items/k")).status_code == 404  # nothing written
        assert (await http.get("/api/memory/nobody")).json()["error"]["code"] == "unknown_agent"

        assert (await http.delete("/api/memory/default/items/tz")).json() == {"deleted": "tz"}
        assert (await http.delete("/api/memory/default/items/tz")).status_code == 404
        assert (await http.get("/api/memory/default/items/tz")).status_code == 404


async def test_scopes_memory_read_and_write(gateway: GatewayServer) -> None:
    assert classify("GET", "/api/memory/a", None)[0].scope == MEMORY_READ
    assert classify("PUT", "/api/memory/a/items/k", None)[0].scope == MEMORY_WRITE
    async with gateway.http(READER) as http:
        assert (await http.get("/api/memory/default")).status_code == 200
        refused = await http.put("/api/memory/default/items/k", json={"text": "x"})
        assert refused.status_code == 403 and "memory:write" in refused.json()["error"]["message"]


async def test_a_store_that_is_down_is_503_with_retry_after(agents: AgentTestEnvironment) -> None:
    down = "postgresql://postgres@127.0.0.1:1/postgres"
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS, memory_store_url=down) as server:
        async with server.http(ALICE) as http:
            for answered in (
                await http.get("/api/memory/default", params={"q": "x"}),
                await http.put("/api/memory/default/items/k", json={"text": "x"}),
            ):
                assert answered.status_code == 503
                assert answered.headers["retry-after"] == "5"
                assert answered.json()["error"]["code"] == "unavailable"
