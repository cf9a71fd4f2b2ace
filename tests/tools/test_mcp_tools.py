"""MCP servers as tool sources, against real MCP servers over stdio and streamable HTTP.

A real worker (real dev server) gets the tools of two real servers, the demo server of
`tests/mcp_servers/` run over stdio (a subprocess of the worker) and over HTTP (a
separate process the tests kill and restart); runs call them through the scripted model.
"""

from __future__ import annotations

import hashlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowFailureError

from activities.tools.mcp_config import parse_mcp_config
from activities.tools.mcp_tools import mcp_tools
from activities.tools.tool_registry import ToolRegistry, default_registry
from tests.mcp_servers.harness import (
    HttpMcpServer,
    activities_of,
    answer_of,
    calls,
    pid_of_hanging_call,
    start_agent,
    status_of,
    stdio_server,
    tool_messages,
)
from worker import build_worker


@dataclass
class McpWorker:
    task_queue: str
    registry: ToolRegistry
    state_dir: Path
    http: HttpMcpServer


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mcp(client: Client, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpWorker]:
    state_dir = tmp_path_factory.mktemp("mcp-state")
    http = HttpMcpServer(state_dir)
    http.start()
    servers = parse_mcp_config(
        {
            "mcpServers": {
                "local": stdio_server(state_dir),
                "remote": {"url": http.url, "tools": ["add", "shout", "fail", "hang_once"]},
            }
        }
    )
    registry = default_registry()
    queue = f"react-mcp-test-{uuid.uuid4().hex[:8]}"
    try:
        async with mcp_tools(servers, registry):
            async with build_worker(client, task_queue=queue, registry=registry, max_cached_workflows=0):
                yield McpWorker(queue, registry, state_dir, http)
    finally:
        http.kill()


async def test_tools_are_listed_with_the_servers_schemas(client: Client, mcp: McpWorker) -> None:
    assert mcp.registry.names() == [
        "calculator",
        *(f"local__{name}" for name in ["add", "fail", "hang_once", "record", "shout"]),
        *(f"remote__{name}" for name in ["add", "fail", "hang_once", "shout"]),
    ]
    # What the LLM activity sends the model for these names (it resolves them from this registry).
    shout, add = (mcp.registry.spec(name).model_dump() for name in ["local__shout", "remote__add"])
    assert shout["name"] == "local__shout" and shout["description"].startswith("Upper-case a text")
    assert shout["parameters"] == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
        "required": ["text"],
    }
    assert add["name"] == "remote__add"
    assert add["parameters"]["required"] == ["a", "b"]


@pytest.mark.parametrize("server", ["local", "remote"])
async def test_a_run_calls_the_tool_and_reads_the_servers_result(
    client: Client, mcp: McpWorker, server: str
) -> None:
    script = [calls((f"{server}__add", {"a": 17, "b": 25}), (f"{server}__shout", {"text": "hi", "times": 2}))]
    handle = await start_agent(
        client,
        mcp.task_queue,
        [*script, {"content": "42, HI HI"}],
        [
            f"{server}__add",
            f"{server}__shout",
        ],
    )
    result = await handle.result()
    assert status_of(result) == "completed" and answer_of(result) == "42, HI HI"
    assert tool_messages(result) == [
        {"ok": True, "result": {"result": 42}},
        {"ok": True, "result": {"result": "HI HI"}},
    ]
    summaries = [a["input"]["call"]["name"] for a in await activities_of(handle, "run_tool")]
    assert summaries == [f"{server}__add", f"{server}__shout"]


async def test_the_allow_list_hides_the_other_tools(client: Client, mcp: McpWorker) -> None:
    assert "local__admin_reset" not in mcp.registry and "remote__record" not in mcp.registry
    # A run that asks for a hidden tool fails with invalid_input before the model is asked...
    refused = await start_agent(client, mcp.task_queue, [{"content": "no"}], ["local__admin_reset"])
    with pytest.raises(WorkflowFailureError) as failure:
        await refused.result()
    assert "invalid_input: unknown tool(s) 'local__admin_reset'" in str(failure.value.cause)
    # ...and a model that calls one anyway reads an error result; the server is never asked.
    script = [calls(("local__admin_reset", {})), {"content": "could not"}]
    handle = await start_agent(client, mcp.task_queue, script, ["local__add"])
    result = await handle.result()
    (message,) = tool_messages(result)
    assert message["ok"] is False and message["error"]["type"] == "unknown_tool"
    assert await activities_of(handle, "run_tool") == []


async def test_a_tool_error_is_an_error_result_without_retries(client: Client, mcp: McpWorker) -> None:
    script = [
        calls(("remote__fail", {"reason": "disk full"}), ("local__add", {"a": "x", "b": 1})),
        {"content": "."},
    ]
    handle = await start_agent(
        client, mcp.task_queue, script, ["remote__fail", "local__add"], tool_max_retries=3
    )
    result = await handle.result()
    failed, invalid = tool_messages(result)
    assert failed["ok"] is False and failed["error"]["type"] == "tool_error"
    assert "cannot comply: disk full" in failed["error"]["message"]
    assert failed["error"]["details"] == {"server": "remote", "tool": "fail"}
    # The server validates the arguments: its message says what is wrong.
    assert invalid["ok"] is False and "valid integer" in invalid["error"]["message"]
    assert [a["attempt"] for a in await activities_of(handle, "run_tool")] == [1, 1]


async def test_a_stdio_server_killed_mid_call_is_restarted_and_the_call_retried(
    client: Client, mcp: McpWorker
) -> None:
    label = uuid.uuid4().hex[:8]
    script = [calls(("local__hang_once", {"label": label})), {"content": "done"}]
    handle = await start_agent(client, mcp.task_queue, script, ["local__hang_once"], tool_max_retries=2)
    first_pid = await pid_of_hanging_call(mcp.state_dir, label)
    os.kill(first_pid, signal.SIGKILL)
    result = await handle.result()
    (message,) = tool_messages(result)
    assert message["ok"] is True and message["result"]["result"].startswith(f"recovered {label} in ")
    assert int(message["result"]["result"].rsplit(" ", 1)[1]) != first_pid
    (activity,) = await activities_of(handle, "run_tool")
    assert activity["attempt"] == 2 and activity["result"]["attempts"] == 2


async def test_an_http_server_killed_mid_call_is_retried_once_it_is_back(
    client: Client, mcp: McpWorker
) -> None:
    label = uuid.uuid4().hex[:8]
    script = [calls(("remote__hang_once", {"label": label})), {"content": "done"}]
    config = {"tool_max_retries": 8, "tool_retry_backoff_s": 0.5}
    handle = await start_agent(client, mcp.task_queue, script, ["remote__hang_once"], **config)
    await pid_of_hanging_call(mcp.state_dir, label)
    mcp.http.kill()
    mcp.http.start()
    result = await handle.result()
    (message,) = tool_messages(result)
    assert message["ok"] is True and message["result"]["result"].startswith(f"recovered {label}")
    (activity,) = await activities_of(handle, "run_tool")
    assert activity["attempt"] >= 2


async def test_an_http_server_that_stays_down_gives_a_clear_error_result(
    client: Client, mcp: McpWorker
) -> None:
    mcp.http.kill()
    try:
        script = [calls(("remote__add", {"a": 1, "b": 2})), {"content": "the tool is down"}]
        config = {"tool_max_retries": 2, "tool_retry_backoff_s": 0.05}
        handle = await start_agent(client, mcp.task_queue, script, ["remote__add"], **config)
        result = await handle.result()
    finally:
        mcp.http.start()
    assert status_of(result) == "completed"
    (message,) = tool_messages(result)
    error = message["error"]
    assert message["ok"] is False and error["type"] == "connection" and error["retryable"] is True
    assert f"MCP server 'remote' ({mcp.http.url}): cannot connect" in error["message"]
    (activity,) = await activities_of(handle, "run_tool")
    assert activity["attempt"] == 3 and activity["failure"]["type"] == "connection"


async def test_a_hanging_call_times_out_and_the_server_keeps_serving(client: Client, mcp: McpWorker) -> None:
    label = uuid.uuid4().hex[:8]
    script = [
        calls(("local__hang_once", {"label": label})),
        calls(("local__add", {"a": 1, "b": 1})),
        {"content": "."},
    ]
    config = {"tool_timeout_s": 1, "tool_max_retries": 0}
    handle = await start_agent(client, mcp.task_queue, script, ["local__hang_once", "local__add"], **config)
    result = await handle.result()
    timed_out, added = tool_messages(result)
    assert timed_out["ok"] is False and timed_out["error"]["type"] == "timeout"
    assert added == {"ok": True, "result": {"result": 2}}


async def test_http_5xx_is_retried_and_protocol_errors_are_not(client: Client, mcp: McpWorker) -> None:
    outcomes: list[dict[str, Any]] = []
    for fault in ("500", "400", "bad-result"):
        (mcp.state_dir / "http-faults").write_text(f"{fault}\n")
        script = [calls(("remote__add", {"a": 2, "b": 2})), {"content": "."}]
        handle = await start_agent(client, mcp.task_queue, script, ["remote__add"], tool_max_retries=2)
        (message,) = tool_messages(await handle.result())
        (activity,) = await activities_of(handle, "run_tool")
        outcomes.append({**message, "attempt": activity["attempt"]})
    retried, rejected, invalid = outcomes
    assert retried == {"ok": True, "result": {"result": 4}, "attempt": 2}
    assert rejected["ok"] is False and rejected["error"]["type"] == "tool_error" and rejected["attempt"] == 1
    assert "rejected the request: injected: bad params (code -32602)" in rejected["error"]["message"]
    assert invalid["ok"] is False and invalid["error"]["type"] == "tool_error" and invalid["attempt"] == 1
    assert "answered with an invalid result" in invalid["error"]["message"]


async def test_each_call_sends_its_idempotency_key_in_meta(client: Client, mcp: McpWorker) -> None:
    script = [calls(("local__record", {"note": "a"}), ("local__record", {"note": "b"})), {"content": "."}]
    handle = await start_agent(client, mcp.task_queue, script, ["local__record"])
    result = await handle.result()
    keys = [message["result"]["key"] for message in tool_messages(result)]
    description = await handle.describe()
    expected = [
        hashlib.sha256(f"{handle.id}\x1f{description.run_id}\x1f{a['activity_id']}".encode()).hexdigest()
        for a in await activities_of(handle, "run_tool")
    ]
    assert keys == expected and len(set(keys)) == 2
