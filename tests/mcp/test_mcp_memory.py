"""The MCP memory tools through the official `mcp` client, against a real gateway and the session's store.

`memory_search`, `memory_get`, `memory_put` and `memory_delete` over streamable HTTP.

They are the `/api/memory` routes' operations: an item put through MCP is the item HTTP reads; the
same refusals by name with nothing written; another principal's items are `not_found`; the scopes
`memory:read` and `memory:write`; a write is audited without its text.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from mcp_types import CallToolResult

from contracts.memory import MemoryConfig
from gateway.guard.operations import classify
from gateway.identity.audit import AUDIT_LOGGER
from gateway.identity.scopes import MEMORY_READ, MEMORY_WRITE
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, auth, running_gateway
from tests.mcp_helpers import mcp_client, result_of

READER = "mcp-reader-token-0123456789"
JSONRPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SECRET_TEXT = "The user's locker code is 7311"
AGENTS = {
    **TEST_AGENTS,
    "keeper": scripted_agent(answer("Noted."), memory=MemoryConfig(tools=True, recall=0, namespace="shared")),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    tokens = f"{TEST_TOKENS},{READER}=carol:memory:read"
    async with running_gateway(agents, AGENTS, tokens=tokens) as server:
        yield server


def code_of(result: CallToolResult) -> str:
    assert result.is_error, result
    return result_of(result)["error"]["code"]


async def test_the_memory_tools_are_listed_with_their_arguments(gw: GatewayServer) -> None:
    async with mcp_client(gw, ALICE) as client:
        tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    assert set(tools["memory_search"]["properties"]) == {"agent", "query", "limit", "cursor"}
    assert tools["memory_search"]["required"] == ["agent"]
    assert set(tools["memory_put"]["properties"]) == {"agent", "key", "text", "value", "ttl_s"}
    assert sorted(tools["memory_put"]["required"]) == ["agent", "key", "text"]
    assert (
        sorted(tools["memory_get"]["required"])
        == sorted(tools["memory_delete"]["required"])
        == [
            "agent",
            "key",
        ]
    )


async def test_put_get_search_list_delete_match_the_http_routes(gw: GatewayServer) -> None:
    key = f"k{uuid.uuid4().hex[:6]}"
    async with mcp_client(gw, ALICE) as client:
        put = result_of(
            await client.call_tool(
                "memory_put",
                {"agent": "keeper", "key": key, "text": "Prefers tea over coffee", "value": {"drink": "tea"}},
            )
        )
        assert put["key"] == key and put["value"] == {"drink": "tea"}
        assert set(put) == {"key", "text", "value", "created_at", "updated_at"}
        async with gw.http(ALICE) as http:  # the routes read the same item in the same shape
            assert (await http.get(f"/api/memory/keeper/items/{key}")).json() == put
        got = result_of(await client.call_tool("memory_get", {"agent": "keeper", "key": key}))
        assert got == put
        found = result_of(await client.call_tool("memory_search", {"agent": "keeper", "query": "tea"}))
        assert [item["key"] for item in found["items"]] == [key] and "score" in found["items"][0]
        second = result_of(
            await client.call_tool(
                "memory_put", {"agent": "keeper", "key": f"{key}-b", "text": "Lives in Lyon", "ttl_s": 3600}
            )
        )
        assert "expires_at" in second
        listed = result_of(await client.call_tool("memory_search", {"agent": "keeper"}))
        assert [item["key"] for item in listed["items"]] == [key, f"{key}-b"]
        paged = result_of(await client.call_tool("memory_search", {"agent": "keeper", "limit": 1}))
        assert [item["key"] for item in paged["items"]] == [key]
        rest = result_of(
            await client.call_tool(
                "memory_search", {"agent": "keeper", "limit": 1, "cursor": paged["next_cursor"]}
            )
        )
        assert [item["key"] for item in rest["items"]] == [f"{key}-b"]

        async with mcp_client(gw, BOB) as bob:  # alice's items do not exist for bob
            assert result_of(await bob.call_tool("memory_search", {"agent": "keeper", "query": "tea"})) == {
                "items": []
            }
            assert code_of(await bob.call_tool("memory_get", {"agent": "keeper", "key": key})) == "not_found"
            assert (
                code_of(await bob.call_tool("memory_delete", {"agent": "keeper", "key": key})) == "not_found"
            )
        assert result_of(await client.call_tool("memory_get", {"agent": "keeper", "key": key}))["key"] == key

        deleted = result_of(await client.call_tool("memory_delete", {"agent": "keeper", "key": key}))
        assert deleted == {"deleted": key}
        assert (
            code_of(await client.call_tool("memory_delete", {"agent": "keeper", "key": key})) == "not_found"
        )
        assert code_of(await client.call_tool("memory_get", {"agent": "keeper", "key": key})) == "not_found"
        async with gw.http(ALICE) as http:
            assert (await http.get(f"/api/memory/keeper/items/{key}")).status_code == 404


async def test_bad_input_is_refused_by_name_and_nothing_is_written(gw: GatewayServer) -> None:
    async with mcp_client(gw, BOB) as client:
        refusals = {
            "empty text": {"agent": "default", "key": "k", "text": ""},
            "bad key": {"agent": "default", "key": "bad key", "text": "x"},
            "ttl range": {"agent": "default", "key": "k", "text": "x", "ttl_s": 0},
            "too long": {"agent": "default", "key": "k", "text": "x" * 5000},
            "unknown agent": {"agent": "nobody", "key": "k", "text": "x"},
        }
        codes = {name: code_of(await client.call_tool("memory_put", args)) for name, args in refusals.items()}
        assert codes == {
            "empty text": "invalid_input",
            "bad key": "invalid_input",
            "ttl range": "invalid_input",
            "too long": "payload_too_large",
            "unknown agent": "unknown_agent",
        }
        async with gw.http(BOB) as http:  # the same refusals as the routes give
            routed = await http.put("/api/memory/default/items/k", json={"text": "x", "ttl_s": 0})
            assert routed.json()["error"]["code"] == codes["ttl range"]
        assert code_of(await client.call_tool("memory_get", {"agent": "default", "key": "k"})) == "not_found"
        assert code_of(await client.call_tool("memory_search", {"agent": "nobody"})) == "unknown_agent"
        assert code_of(await client.call_tool("memory_search", {"agent": "default", "limit": 0})) == (
            "invalid_input"
        )


async def test_scopes_memory_read_and_write(gw: GatewayServer) -> None:
    def tool_call(name: str) -> bytes:
        call: dict[str, object] = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": {}},
        }
        return json.dumps(call).encode()

    for name, scope in (
        ("memory_search", MEMORY_READ),
        ("memory_get", MEMORY_READ),
        ("memory_put", MEMORY_WRITE),
        ("memory_delete", MEMORY_WRITE),
    ):
        [operation] = classify("POST", "/mcp", tool_call(name))
        assert operation.scope == scope, name
        assert (operation.action, operation.audited) == (
            ("remember", True) if scope == MEMORY_WRITE else ("read", False)
        ), name
    async with mcp_client(gw, READER) as reader:
        assert result_of(await reader.call_tool("memory_search", {"agent": "default"})) == {"items": []}
    headers = {**JSONRPC_HEADERS, **auth(READER)}
    async with httpx.AsyncClient(base_url=gw.url, headers=headers) as http:
        refused = await http.post("/mcp", content=tool_call("memory_put"))
    assert refused.status_code == 403
    assert "memory:write" in refused.json()["error"]["message"]


async def test_a_write_is_audited_without_its_text(
    gw: GatewayServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    async with mcp_client(gw, ALICE) as client:
        put = await client.call_tool("memory_put", {"agent": "keeper", "key": "locker", "text": SECRET_TEXT})
        assert not put.is_error, put
        assert not (await client.call_tool("memory_delete", {"agent": "keeper", "key": "locker"})).is_error
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER]
    assert [(line["principal"], line["action"], line["target"]) for line in lines] == [
        ("alice", "remember", "keeper"),
        ("alice", "remember", "keeper"),
    ]
    assert SECRET_TEXT not in "\n".join(r.getMessage() for r in caplog.records)
