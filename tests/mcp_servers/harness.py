"""Test harness: real MCP server processes, and runs read back as JSON from their history.

Runs are started with plain JSON input (`ReActRun`, `query`, `config`) and checked
through their history and the JSON of their result, so the tests do not depend on the
Python classes of the run's contracts.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, cast

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

SERVER_SCRIPT = Path(__file__).with_name("demo_server.py")
ALLOWED = ["add", "shout", "fail", "hang_once", "record"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpMcpServer:
    """The demo server over streamable HTTP, in its own process, which tests kill and restart."""

    def __init__(self, state_dir: Path, port: int | None = None) -> None:
        self.state_dir = state_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60) -> None:
        """Start the server and wait until it accepts connections."""
        env = {**os.environ, "MCP_TEST_STATE_DIR": str(self.state_dir)}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--http", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the MCP test server exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"the MCP test server did not listen on {self.port} within {timeout_s}s")

    def kill(self) -> None:
        """SIGKILL the server process (if running) and reap it."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


def stdio_server(state_dir: Path, tools: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """An `mcpServers` entry that runs the demo server over stdio."""
    return {
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT)],
        "env": {"MCP_TEST_STATE_DIR": str(state_dir)},
        "tools": tools or ALLOWED,
        **extra,
    }


async def pid_of_hanging_call(state_dir: Path, label: str, timeout_s: float = 30) -> int:
    """The pid of the server process that is running `hang_once(label)`, once it has started."""
    marker = state_dir / f"hang-{label}.pid"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError(f"hang_once({label!r}) did not start within {timeout_s}s")


def process_exists(pid: int) -> bool:
    """Whether a process (not a zombie) has this pid."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def process_running(command_line: str) -> bool:
    """Whether a live process has exactly this command line."""
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if status.read_bytes().replace(b"\0", b" ").strip() == command_line.encode():
                return process_exists(int(status.parent.name))
        except OSError:
            continue
    return False


async def start_agent(
    client: Client, task_queue: str, script: list[dict[str, Any]], tools: list[str], **config: Any
) -> WorkflowHandle[Any, Any]:
    """Start a `ReActRun` with the scripted model, from plain JSON."""
    run_input = {
        "query": "Use the tools.",
        "config": {"model": "scripted", "script": script, "tools": tools, **config},
    }
    return await client.start_workflow(
        "ReActRun", run_input, id=f"test-mcp-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A script turn that calls tools."""
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in pairs]}


def tool_messages(result: Any) -> list[dict[str, Any]]:
    """The tool results the model read, in order, from a run's result JSON (wherever they sit)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            entry = cast(dict[str, object], node)
            content = entry.get("content")
            if entry.get("role") == "tool" and isinstance(content, str):
                found.append(json.loads(content))
                return
            for value in node.values():  # pyright: ignore[reportUnknownVariableType]
                walk(value)
        elif isinstance(node, list):
            for value in node:  # pyright: ignore[reportUnknownVariableType]
                walk(value)

    walk(result.get("entries", []))
    return found


async def activities_of(handle: WorkflowHandle[Any, Any], activity_type: str) -> list[dict[str, Any]]:
    """Every activity of a type in the run's history: id, input, and result or last failure."""
    history = await handle.fetch_history()
    scheduled: dict[int, dict[str, Any]] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == activity_type:
                scheduled[event.event_id] = {
                    "activity_id": attrs.activity_id,
                    "input": json.loads(attrs.input.payloads[0].data),
                }
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            if attrs.scheduled_event_id in scheduled:
                scheduled[attrs.scheduled_event_id]["attempt"] = attrs.attempt
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in scheduled:
                scheduled[attrs.scheduled_event_id]["result"] = json.loads(attrs.result.payloads[0].data)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            attrs = event.activity_task_failed_event_attributes
            if attrs.scheduled_event_id in scheduled:
                failure = attrs.failure
                scheduled[attrs.scheduled_event_id]["failure"] = {
                    "message": failure.message,
                    "type": failure.application_failure_info.type,
                    "non_retryable": failure.application_failure_info.non_retryable,
                }
    return list(scheduled.values())


def status_of(result: Any) -> str:
    """A run result's status, from its JSON."""
    return str(result["outcome"]["status"])


def answer_of(result: Any) -> str | None:
    """A run result's final answer, from its JSON (the entry at `outcome.answer_seq`)."""
    seq = result["outcome"].get("answer_seq")
    entries: list[dict[str, Any]] = result.get("entries", [])
    return next((str(e["payload"]["content"]) for e in entries if e["seq"] == seq), None)
