"""Measure MCP tool latency: connect, a direct call, and a call through a real `ReActRun`.

    .venv/bin/python -m tests.mcp_servers.measure_latency [--runs 20]

Starts a local Temporal dev server, the demo MCP server over HTTP (its own process) and over
stdio (a subprocess of this worker), and a worker offering both plus the built-in calculator.
Each run is one tool call and a final answer from the scripted model, so the difference
between a run with an MCP tool and a run with the in-process calculator is the MCP call's
cost inside a run. Prints medians and 90th percentiles in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   (n={len(ordered)})"


async def main(runs: int) -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from activities.tools.mcp_config import parse_mcp_config
    from activities.tools.mcp_tools import mcp_tools
    from activities.tools.tool_registry import default_registry
    from hosting.dev_server import temporal_binary
    from tests.mcp_servers.harness import HttpMcpServer, calls, start_agent, stdio_server, tool_messages
    from worker import build_worker

    state = Path(tempfile.mkdtemp(prefix="mcp-latency-"))
    http = HttpMcpServer(state)
    http.start()
    try:
        async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
            data_converter=pydantic_data_converter,
            dev_server_existing_path=temporal_binary(),
            dev_server_log_level="error",
        ) as env:
            for name, entry in [
                ("stdio", stdio_server(state, ["add"])),
                ("http", {"url": http.url, "tools": ["add"]}),
            ]:
                started = time.perf_counter()
                async with mcp_tools(parse_mcp_config({"mcpServers": {"probe": entry}}), default_registry()):
                    print(f"connect + list tools, {name:5}: {(time.perf_counter() - started) * 1000:7.1f} ms")
            servers = parse_mcp_config(
                {
                    "mcpServers": {
                        "local": stdio_server(state, ["add"]),
                        "remote": {"url": http.url, "tools": ["add"]},
                    }
                }
            )
            registry = default_registry()
            queue = f"latency-{uuid.uuid4().hex[:6]}"
            async with (
                mcp_tools(servers, registry),
                build_worker(env.client, task_queue=queue, registry=registry),
            ):
                for tool in ("local__add", "remote__add"):
                    direct: list[float] = []
                    for _ in range(runs * 5):
                        started = time.perf_counter()
                        await registry.call(tool, {"a": 1, "b": 2})
                        direct.append(time.perf_counter() - started)
                    print(f"direct call {tool:12}: {percentiles(direct)}")
                tools: dict[str, dict[str, Any]] = {
                    "calculator": {"expression": "1 + 2"},
                    "local__add": {"a": 1, "b": 2},
                    "remote__add": {"a": 1, "b": 2},
                }
                await _run(
                    env.client, queue, "calculator", tools["calculator"], start_agent, calls, tool_messages
                )
                for tool, arguments in tools.items():
                    samples = [
                        await _run(env.client, queue, tool, arguments, start_agent, calls, tool_messages)
                        for _ in range(runs)
                    ]
                    print(f"run with one {tool:12}: {percentiles(samples)}")
    finally:
        http.kill()


async def _run(
    client: Any, queue: str, tool: str, arguments: dict[str, Any], start: Any, calls: Any, read: Any
) -> float:
    started = time.perf_counter()
    handle = await start(client, queue, [calls((tool, arguments)), {"content": "3"}], [tool])
    result = await handle.result()
    elapsed = time.perf_counter() - started
    (message,) = read(result)
    assert message["ok"], message
    return elapsed


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    asyncio.run(main(parser.parse_args().runs))
