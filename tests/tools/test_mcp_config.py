"""MCP configuration and connections without Temporal: the `mcpServers` file, start-up errors, shutdown."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from activities.tools.mcp_config import McpConfigError, load_mcp_config, merge_configs, parse_mcp_config
from activities.tools.mcp_connection import McpConnection
from activities.tools.mcp_tools import McpStartError, mcp_tools
from activities.tools.tool_registry import ToolFailure, ToolRegistry
from tests.mcp_servers.harness import free_port, process_exists, process_running, stdio_server

STDIO: dict[str, Any] = {"command": "python", "args": ["server.py"], "tools": ["add"]}
HTTP: dict[str, Any] = {"url": "http://127.0.0.1:9/mcp", "tools": ["*"]}


def parse(servers: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    return parse_mcp_config({"mcpServers": servers}, "cfg.json", env or {})


def test_servers_variables_and_disabled_entries() -> None:
    env = {"TOKEN": "s3cret", "ROOT": "/data"}
    configs = parse(
        {
            "files": {
                **STDIO,
                "args": ["--root", "${ROOT}"],
                "env": {"LEVEL": "${LEVEL:-info}"},
                "type": "stdio",
            },
            "search-api": {**HTTP, "headers": {"Authorization": "Bearer ${TOKEN}"}, "type": "http"},
            "old_one": {**STDIO, "disabled": True},
        },
        env,
    )
    assert list(configs) == ["files", "search-api"]
    files, search = configs["files"], configs["search-api"]
    assert files.args == ["--root", "/data"] and files.env == {"LEVEL": "info"} and not files.all_tools
    assert search.headers == {"Authorization": "Bearer s3cret"} and search.all_tools
    assert search.describe() == "http://127.0.0.1:9/mcp" and "s3cret" not in repr(search.describe())
    assert files.describe() == "python --root /data"


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], 'expected an object {"mcpServers": {"<name>": {...}}}'),
        ({"mcpServers": {}, "extra": 1}, 'expected an object {"mcpServers"'),
        ({"mcpServers": []}, "mcpServers must be an object of servers by name"),
        (
            {"mcpServers": {"a__b": STDIO}},
            "mcpServers.a__b: a server name is 1-32 letters, digits, '-' or single '_'",
        ),
        ({"mcpServers": {"x" * 33: STDIO}}, "a server name is 1-32"),
        ({"mcpServers": {"bad name": STDIO}}, "a server name is"),
        ({"mcpServers": {"trailing_": STDIO}}, "a server name is"),
        ({"mcpServers": {"s": "python server.py"}}, "mcpServers.s: expected an object"),
        (
            {"mcpServers": {"s": {**STDIO, **HTTP}}},
            "give either `command` (stdio) or `url` (streamable HTTP)",
        ),
        ({"mcpServers": {"s": {"tools": ["a"]}}}, "give either `command`"),
        ({"mcpServers": {"s": {**STDIO, "autoApprove": []}}}, "mcpServers.s: autoApprove: unknown field"),
        ({"mcpServers": {"s": {"command": "python"}}}, "mcpServers.s: tools: Field required"),
        ({"mcpServers": {"s": {**STDIO, "tools": []}}}, "tools: List should have at least 1 item"),
        (
            {"mcpServers": {"s": {**STDIO, "tools": ["*", "add"]}}},
            '`tools` is either ["*"] or a list of names',
        ),
        ({"mcpServers": {"s": {**STDIO, "tools": ["a", "a"]}}}, "`tools` lists a name twice"),
        ({"mcpServers": {"s": {**HTTP, "type": "sse"}}}, "type: Input should be 'stdio', 'http'"),
        ({"mcpServers": {"s": {**HTTP, "type": "stdio"}}}, "`type` 'stdio' does not go with `url`"),
        ({"mcpServers": {"s": {**STDIO, "type": "http"}}}, "`type` 'http' does not go with `command`"),
        ({"mcpServers": {"s": {**HTTP, "url": "ftp://x"}}}, "`url` must start with http:// or https://"),
        ({"mcpServers": {"s": {**HTTP, "args": ["x"]}}}, "`args`, `env` and `cwd` are for stdio servers"),
        ({"mcpServers": {"s": {**STDIO, "headers": {"A": "b"}}}}, "`headers` are for HTTP servers"),
        ({"mcpServers": {"s": {**STDIO, "command": ""}}}, "command: String should have at least 1 character"),
        (
            {"mcpServers": {"s": {**STDIO, "connect_timeout_s": 0}}},
            "connect_timeout_s: Input should be greater",
        ),
        (
            {"mcpServers": {"s": {**STDIO, "connect_timeout_s": 1e308}}},
            "connect_timeout_s: Input should be less",
        ),
        (
            {"mcpServers": {"s": {**STDIO, "connect_timeout_s": float("nan")}}},
            "connect_timeout_s: Input should be",
        ),
        (
            {"mcpServers": {"s": {**HTTP, "headers": {"Authorization": "Bearer ${NO_SUCH_TOKEN}"}}}},
            "mcpServers.s: environment variable NO_SUCH_TOKEN is not set",
        ),
        (
            {"mcpServers": {"s": {**HTTP, "headers": {"Authorization": 12345}}}},
            "headers.Authorization: Input should",
        ),
    ],
)
def test_bad_configuration_is_one_line(document: Any, problem: str) -> None:
    with pytest.raises(McpConfigError) as error:
        parse_mcp_config(document, "cfg.json", {})
    message = str(error.value)
    assert message.startswith("cfg.json: ") and problem in message and "\n" not in message
    assert "12345" not in message  # values (which may be secrets) are never echoed


def test_files(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"a": STDIO}}))
    assert list(load_mcp_config(good)) == ["a"]
    with pytest.raises(McpConfigError, match=r"^MCP config .*missing.json: cannot read it \(No such file"):
        load_mcp_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {')
    with pytest.raises(McpConfigError, match=r"broken.json: not JSON \(Expecting .*, line 1\)$"):
        load_mcp_config(broken)
    with pytest.raises(McpConfigError, match="MCP server 'a' is configured twice"):
        merge_configs([load_mcp_config(good), load_mcp_config(good)])


async def test_closing_stops_the_stdio_server(tmp_path: Path) -> None:
    servers = parse_mcp_config({"mcpServers": {"one": stdio_server(tmp_path, ["pid"])}})
    registry = ToolRegistry()
    async with mcp_tools(servers, registry) as names:
        assert names == ["one__pid"]
        pid = (await registry.call("one__pid", {}))["result"]
        assert process_exists(pid)
    assert not process_exists(pid)
    with pytest.raises(ToolFailure, match="the worker is shutting down"):
        await registry.call("one__pid", {})


async def test_start_up_errors_are_one_clear_line(tmp_path: Path) -> None:
    missing_tool = parse_mcp_config({"mcpServers": {"demo": stdio_server(tmp_path, ["add", "nope"])}})
    with pytest.raises(
        McpConfigError, match=r"MCP server 'demo' has no tool 'nope'; it offers: add, admin_reset"
    ):
        async with mcp_tools(missing_tool, ToolRegistry()):
            pass
    port = free_port()
    unreachable = parse_mcp_config(
        {
            "mcpServers": {
                "down": {"url": f"http://127.0.0.1:{port}/mcp", "tools": ["*"], "connect_timeout_s": 5}
            }
        }
    )
    with pytest.raises(
        McpStartError, match=rf"MCP server 'down' \(http://127.0.0.1:{port}/mcp\): cannot connect"
    ):
        async with mcp_tools(unreachable, ToolRegistry()):
            pass
    not_a_server = parse_mcp_config(
        {"mcpServers": {"bad": {"command": "/bin/true", "tools": ["*"], "connect_timeout_s": 10}}}
    )
    with pytest.raises(McpStartError, match=r"MCP server 'bad' \(/bin/true\)"):
        async with mcp_tools(not_a_server, ToolRegistry()):
            pass
    clash = ToolRegistry()
    clash.register_schema(_noop, name="demo__add", description="taken", parameters={"type": "object"})
    with pytest.raises(McpConfigError, match="already registered: 'demo__add'"):
        async with mcp_tools(
            parse_mcp_config({"mcpServers": {"demo": stdio_server(tmp_path, ["add"])}}), clash
        ):
            pass


async def test_a_server_that_never_answers_is_given_up_and_stopped() -> None:
    marker = f"600.{int(uuid.uuid4().hex[:5], 16)}"  # `sleep` reads stdin never, answers never
    silent = {"silent": {"command": "sleep", "args": [marker], "tools": ["*"], "connect_timeout_s": 1}}
    with pytest.raises(McpStartError, match=r"MCP server 'silent' \(sleep 600\.\d+\): no answer within 1s"):
        async with mcp_tools(parse_mcp_config({"mcpServers": silent}), ToolRegistry()):
            pass
    assert not process_running(f"sleep {marker}")
    # A call that is cancelled (its activity timed out) while connecting leaves nothing behind.
    silent["silent"]["connect_timeout_s"] = 60
    connection = McpConnection("silent", parse_mcp_config({"mcpServers": silent})["silent"])
    call = asyncio.ensure_future(connection.call_tool("x", {}))
    for _ in range(100):
        if process_running(f"sleep {marker}"):
            break
        await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(200):
        if not process_running(f"sleep {marker}"):
            break
        await asyncio.sleep(0.05)
    assert not process_running(f"sleep {marker}")
    await connection.close()


async def _noop(arguments: dict[str, Any]) -> None:
    del arguments
