"""`client.py` as a user runs it: separate processes against the real dev server and a real worker.

The CLI talks to the product's own task queue, so this module runs a worker on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest_asyncio
from temporalio.client import Client

from contracts import TASK_QUEUE
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from tests.helpers import update_names
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]
CALCULATE = [
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}]},
    {"content": "17 * 23 = 391."},
]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    """A worker on the product's task queue (where the CLI starts runs and sessions)."""
    worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
    async with worker:
        yield TASK_QUEUE


@dataclass
class Finished:
    """What a `client.py` process did."""

    code: int
    out: str
    err: str


def script_file(tmp_path: Path, turns: Sequence[Mapping[str, object]]) -> str:
    path = tmp_path / f"script-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(turns), encoding="utf-8")
    return str(path)


async def spawn(client: Client, *args: str) -> asyncio.subprocess.Process:
    """Start `client.py ARGS` against the test server (the environment names the test payload store)."""
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host, "COLUMNS": "200"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        *args,
        cwd=REPO,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process, stdin: str | None = None, before: str = "") -> Finished:
    """Wait for the process (feeding it `stdin`); `before` is output read from it earlier."""
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), 120)
    assert process.returncode is not None
    return Finished(process.returncode, before + out.decode(), err.decode())


async def cli(client: Client, *args: str) -> Finished:
    """Run `client.py ARGS` to its end."""
    return await finish(await spawn(client, *args))


async def read_until(process: asyncio.subprocess.Process, marker: str) -> str:
    """Standard output up to and including the first line that contains `marker`."""
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or marker not in lines[-1]:
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert line, f"the process ended before printing {marker!r}: {''.join(lines)}"
        lines.append(line)
    return "".join(lines)


async def test_run_follow_show_steer_and_cancel(client: Client, product_queue: str, tmp_path: Path) -> None:
    run_id = f"cli-run-{uuid.uuid4().hex[:8]}"
    done = await cli(
        client,
        "run",
        "What is 17 * 23?",
        "--script",
        script_file(tmp_path, CALCULATE),
        "--tool",
        "calculator",
        "--id",
        run_id,
    )
    assert done.code == 0, done.err
    assert f"workflow id: {run_id}" in done.out and "tool_started" in done.out
    assert "run completed (final_answer)" in done.out and "answer: 17 * 23 = 391." in done.out

    state = await cli(client, "show", run_id, "state")
    assert state.code == 0 and "completed" in state.out and "thread#3" in state.out
    thread = await cli(client, "show", run_id, "thread", "--json")
    assert [entry["seq"] for entry in json.loads(thread.out)] == [0, 1, 2, 3]
    trace = await cli(client, "show", run_id, "trace")
    assert "request_completed" in trace.out and "calculator ok -> 391" in trace.out
    assert "17 * 23 = 391." in (await cli(client, "show", run_id, "context")).out

    slow_id = f"cli-slow-{uuid.uuid4().hex[:8]}"
    slow = script_file(tmp_path, [{"content": "late", "delay_s": 60}])
    started = await cli(client, "run", "Wait.", "--script", slow, "--id", slow_id, "--no-follow")
    assert started.code == 0 and started.out.strip() == slow_id
    steered = await cli(client, "steer", slow_id, "Be brief.", "--source", "cli-test")
    assert steered.code == 0 and steered.out.startswith("queued "), steered.err
    too_long = await cli(client, "steer", slow_id, "x" * 100_001)
    assert too_long.code == 1 and too_long.err.startswith("rejected: payload_too_large")
    switched = await cli(client, "context", "switch", slow_id, "drafts", "--op-id", "op-cli")
    assert switched.code == 0 and switched.out.startswith("deferred op-cli")
    cancelled = await cli(client, "cancel", slow_id, "--reason", "test over")
    assert cancelled.code == 0 and cancelled.out.startswith("accepted")
    assert "cancelled" in (await cli(client, "show", slow_id, "state")).out
    late = await cli(client, "steer", slow_id, "still there?")
    assert late.code == 1 and late.out.startswith("rejected: not_running")
    assert await update_names(client.get_workflow_handle(slow_id)) == ["steer", "context_modify", "cancel"]


async def test_session_ask_await_status_history_export_and_chat(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session = f"agent-cli-{uuid.uuid4().hex[:8]}"
    first = await cli(
        client,
        "ask",
        session,
        "What is 17 * 23?",
        "--script",
        script_file(tmp_path, CALCULATE),
        "--tool",
        "calculator",
    )
    assert first.code == 0, first.err
    assert "request id:" in first.out and "answer: 17 * 23 = 391." in first.out

    plus_one = script_file(tmp_path, [{"content": "392"}])
    asked = await cli(client, "ask", session, "And plus one?", "--script", plus_one, "--no-follow")
    assert asked.code == 0 and "run workflow id:" in asked.err
    request_id = asked.out.strip()
    awaited = await cli(client, "await", session, request_id)
    assert (
        awaited.code == 0
        and f"request {request_id} completed" in awaited.out
        and "answer: 392" in awaited.out
    )
    assert "query: And plus one?" in awaited.out

    status = await cli(client, "status", session)
    assert "idle" in status.out and "calculator" in status.out
    history = await cli(client, "history", session)
    assert (
        history.out.count("-- request") == 2
        and 'calculator -> {"ok": true, "result": 391}' in history.out
        and "392" in history.out
    )
    since = await cli(client, "history", session, "--since", "5", "--json")
    assert [entry["seq"] for entry in json.loads(since.out)] == [5]
    requests = await cli(client, "history", session, "--requests")
    assert request_id in requests.out and "thread#5" in requests.out
    exported = await cli(client, "export", session, "--ttl", "600")
    assert exported.code == 0 and exported.out.startswith("rt2.") and "expires at" in exported.err
    compact = await cli(client, "compact", session)
    assert compact.code == 1 and compact.out.startswith("rejected: nothing_to_compact")

    # The chat: a line asks, its run streams to the answer; then a command, then /quit.
    chatting = await spawn(client, "chat", session, "--script", plus_one)
    assert chatting.stdin is not None
    chatting.stdin.write(b"Once more?\n")
    answered = await read_until(chatting, "answer: 392")
    chat = await finish(chatting, "/requests\n/quit\n", answered)
    assert chat.code == 0 and chat.err == "", chat.err
    assert "request_completed" in chat.out and chat.out.count("completed") >= 4  # 3 requests in the table


async def test_quitting_a_chat_mid_run_leaves_the_request_running(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session = f"agent-cli-{uuid.uuid4().hex[:8]}"
    slow = script_file(tmp_path, [{"content": "finally", "delay_s": 3}])
    chatting = await spawn(client, "chat", session, "--script", slow)
    assert chatting.stdin is not None
    chatting.stdin.write(b"Take your time.\n")
    started = await read_until(chatting, "llm_started")
    chat = await finish(chatting, "/quit\n", started)
    assert chat.code == 0 and chat.err == "", chat.err
    assert "stopped following: the request goes on in the session" in chat.out
    finished = await cli(client, "history", session, "--requests")
    assert "Take your time." in finished.out
