"""A fork's thread id always fits the thread-id rule, so every route takes the fork (REST and MCP).

A thread id of 94-100 characters used to fork into `<id>-fork-<n>` (101-107 characters): listed,
running, and refused by every route. The gateway now names its forks itself
(`gateway.owners.fork_session_id`): `<thread>-fork-<n>` with the lowest free n, the start of a long
thread id kept and a digest of it inserted when that would be too long.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from gateway.owners import MAX_THREAD_ID_CHARS, THREAD_ID_PATTERN, fork_thread_id
from tests.gateway_helpers import ALICE, GatewayServer, agui_run, auth, module_gateway, run_input

gateway = module_gateway()


def _long_thread(chars: int) -> str:
    return f"long-{uuid.uuid4().hex}-".ljust(chars, "x")


def test_every_default_fork_id_fits_the_thread_id_rule() -> None:
    for chars in range(1, MAX_THREAD_ID_CHARS + 1):
        thread = "t" * chars
        for n in (1, 9, 10, 99, 12345, 1 << 20):
            forked = fork_thread_id(thread, n)
            assert THREAD_ID_PATTERN.match(forked), (chars, n, forked)
            assert forked.endswith(f"-fork-{n}")
    assert fork_thread_id("short", 1) == "short-fork-1"
    long_a, long_b = "a" * 100, "a" * 99 + "b"
    assert fork_thread_id(long_a, 1) != fork_thread_id(long_b, 1)  # cut ids differ by their digest
    assert len(fork_thread_id(long_a, 1)) == MAX_THREAD_ID_CHARS


async def test_forks_of_a_100_character_thread_id_answer_every_route(gateway: GatewayServer) -> None:
    thread = _long_thread(MAX_THREAD_ID_CHARS)
    async with gateway.http(ALICE) as http:
        await agui_run(http, run_input(thread, f"r-{uuid.uuid4().hex[:8]}"))
        first = await http.post(f"/api/threads/default/{thread}/fork", json={})
        assert first.status_code == 200, first.text
        second = await http.post(f"/api/threads/default/{thread}/fork", json={})
        assert second.status_code == 200, second.text
        forks = [first.json()["thread_id"], second.json()["thread_id"]]
        assert forks[0].endswith("-fork-1") and forks[1].endswith("-fork-2"), forks
        grandchild = await http.post(f"/api/threads/default/{forks[0]}/fork", json={})
        assert grandchild.status_code == 200, grandchild.text
        forks.append(grandchild.json()["thread_id"])
        for fork in forks:
            assert THREAD_ID_PATTERN.match(fork), fork
            shown = await http.get(f"/api/threads/default/{fork}")
            assert shown.status_code == 200, shown.text
            assert shown.json()["forked_from"]["agent"] == "default"
        asked = await agui_run(http, run_input(forks[0], f"r-{uuid.uuid4().hex[:8]}", "Again"))
        assert asked[-1].type == "RUN_FINISHED"
        listed = {t["thread_id"] for t in (await http.get("/api/threads")).json()["threads"]}
        assert set(forks) <= listed


@asynccontextmanager
async def _mcp(gw: GatewayServer) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=auth(ALICE), timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(f"{gw.url}/mcp", http_client=http)) as client,
    ):
        yield client


def _result(result: CallToolResult) -> dict[str, object]:
    assert result.structured_content is not None, result
    return result.structured_content


async def test_an_mcp_fork_of_a_long_thread_id_answers_every_tool(gateway: GatewayServer) -> None:
    thread = _long_thread(97)
    async with _mcp(gateway) as client:
        asked = _result(await client.call_tool("ask", {"query": "Hi", "session": thread}))
        assert asked["status"] == "completed", asked
        forked = _result(await client.call_tool("fork", {"session": thread}))
        fork = str(forked["session"])
        assert THREAD_ID_PATTERN.match(fork), fork
        history = await client.call_tool("history", {"session": fork})
        assert not history.is_error, history
        again = _result(await client.call_tool("ask", {"query": "More", "session": fork}))
        assert again["status"] == "completed", again
