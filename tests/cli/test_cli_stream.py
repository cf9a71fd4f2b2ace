"""The CLI following runs live through their streams: `chat` in a real terminal (a pty), steer's flags.

The chat runs as a user runs it: a separate `client.py` process whose standard streams
are a pseudo-terminal, so rich draws its live region as it would on a screen.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import struct
import sys
import termios
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.client import Client

from cli import render
from cli.render_session import accepted_line
from clients.sessions import Sessions
from contracts import TASK_QUEUE, Ack, TraceEvent
from contracts.session import AskAccepted
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from tests.cli.test_cli_follow import REPO, cli, script_file, spawn
from worker import build_worker

STORY = "Once upon a time " + "the agent kept on typing, " * 6 + "and then it stopped."
# About 10 s of typing: the first words must be on screen long before the last, even on a loaded machine.
LONG_STORY = "Once upon a time " + "the agent kept on typing, " * 15 + "and then it stopped."
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")
WAIT_S = 60.0


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    """A worker on the product's task queue (where the CLI starts runs and sessions)."""
    worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
    async with worker:
        yield TASK_QUEUE


class Terminal:
    """A pseudo-terminal of 50 rows by 200 columns: what a process wrote to it, as plain text."""

    def __init__(self) -> None:
        """Open the terminal (`child` is the process's side)."""
        self.master, self.child = pty.openpty()
        fcntl.ioctl(self.child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.raw = b""
        self.closed = asyncio.Event()
        self._grew = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.master, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the process closed its side
            chunk = b""
        if not chunk:
            asyncio.get_running_loop().remove_reader(self.master)
            self.closed.set()
        self.raw += chunk
        self._grew.set()

    @property
    def text(self) -> str:
        """Everything written so far, without escape sequences and carriage returns."""
        return ANSI.sub("", self.raw.decode(errors="replace")).replace("\r", "")

    async def wait_for(self, marker: str) -> str:
        """The text once `marker` is in it (waiting on output, not on a clock)."""

        async def grown() -> str:
            while marker not in self.text:
                assert not self.closed.is_set(), f"the process ended before writing {marker!r}: {self.text}"
                self._grew.clear()
                await self._grew.wait()
            return self.text

        return await asyncio.wait_for(grown(), WAIT_S)

    def type(self, line: str) -> None:
        """Type a line (as a user would, Enter included)."""
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> None:
        """Close both sides."""
        if not self.closed.is_set():
            asyncio.get_running_loop().remove_reader(self.master)
        for fd in (self.master, self.child):
            try:
                os.close(fd)
            except OSError:
                pass


async def test_chat_renders_the_answer_live_in_a_terminal(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session = f"agent-cli-{uuid.uuid4().hex[:8]}"
    slow = script_file(tmp_path, [{"content": LONG_STORY, "chunk_chars": 4, "chunk_delay_s": 0.1}])
    terminal = Terminal()
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "TERM": "xterm-256color",
    }
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        "chat",
        session,
        "--script",
        slow,
        cwd=REPO,
        env=env,
        stdin=terminal.child,
        stdout=terminal.child,
        stderr=terminal.child,
    )
    try:
        await terminal.wait_for(f"session {session}")
        terminal.type("Tell me a story.")
        shown = await terminal.wait_for(LONG_STORY[:24])
        # The first words are on the screen while the run is still writing the rest.
        assert "llm_completed" not in shown and "request_completed" not in shown and LONG_STORY not in shown
        assert (await Sessions(client).get(session).status()).state == "running"
        final = await terminal.wait_for(f"answer: {LONG_STORY}")
        assert "llm_completed" in final and "request_completed" in final
        terminal.type("/quit")
        assert await asyncio.wait_for(process.wait(), WAIT_S) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        terminal.close()


async def test_run_and_ask_print_the_trace_with_streaming_on_or_off(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    story = script_file(tmp_path, [{"content": STORY, "chunk_chars": 8}])
    for extra in ((), ("--no-stream",)):
        done = await cli(client, "run", "Tell me a story.", "--script", story, *extra)
        assert done.code == 0, done.err
        assert "llm_completed" in done.out and f"answer: {STORY}" in done.out
        asked = await cli(
            client, "ask", f"agent-cli-{uuid.uuid4().hex[:8]}", "Again?", "--script", story, *extra
        )
        assert asked.code == 0 and "request_completed" in asked.out and f"answer: {STORY}" in asked.out


async def test_steer_flags(client: Client, product_queue: str, tmp_path: Path) -> None:
    bad = await cli(client, "steer", "react-nowhere", "Stop.", "--cancel-tools")
    assert bad.code == 1 and "--interrupt" in bad.err
    run_id = f"cli-steer-{uuid.uuid4().hex[:8]}"
    slow = script_file(
        # About 30 s of streaming: the steer's own CLI process may take seconds to start on a loaded machine.
        tmp_path,
        [{"content": STORY * 3, "chunk_chars": 4, "chunk_delay_s": 0.2}, {"content": "ok"}],
    )
    following = await spawn(client, "run", "Tell me a story.", "--script", slow, "--id", run_id)
    assert following.stdout is not None
    while b"llm_started" not in await asyncio.wait_for(following.stdout.readline(), WAIT_S):
        pass
    steered = await cli(client, "steer", run_id, "Be brief.", "--interrupt")
    assert steered.code == 0 and steered.out.startswith("queued ") and "(interrupt)" in steered.out, (
        steered.err
    )
    out, err = await asyncio.wait_for(following.communicate(), WAIT_S)
    assert following.returncode == 0, err.decode()
    assert "llm_interrupted" in out.decode() and "answer: ok" in out.decode()


async def test_ask_on_busy_enqueue_follows_the_queued_run_and_a_stale_ask_is_refused(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session = f"agent-cli-{uuid.uuid4().hex[:8]}"
    slow = script_file(tmp_path, [{"content": LONG_STORY, "chunk_chars": 4, "chunk_delay_s": 0.1}])
    quick = script_file(tmp_path, [{"content": "next in line", "chunk_chars": 4}])
    first = await cli(client, "ask", session, "Tell me a long story.", "--script", slow, "--no-follow")
    assert first.code == 0, first.err
    queued = await cli(client, "ask", session, "And then?", "--script", quick, "--on-busy", "enqueue")
    assert queued.code == 0, queued.err
    assert "enqueued: runs after the active request (position 1)" in queued.out
    assert "answer: next in line" in queued.out and "request_completed" in queued.out
    # The queued run was waited for, then streamed.
    assert "not readable" not in queued.out and "stream unavailable" not in queued.out
    stale = await cli(
        client, "ask", session, "Me too?", "--script", quick, "--expected-last-request", first.out.strip()
    )
    assert stale.code == 1 and stale.err.startswith("rejected: stale"), stale.err
    unknown = await cli(client, "ask", session, "Me too?", "--on-busy", "shout")
    assert unknown.code == 2 and "shout" in unknown.err


def test_what_the_live_commands_print() -> None:
    interrupted = Ack(status="queued", input_id="in-1", mode="interrupt")
    assert render.ack_line(interrupted) == "queued in-1 (interrupt)"
    assert render.ack_line(Ack(status="queued", input_id="in-2", mode="queue")) == "queued in-2"
    event = TraceEvent.model_validate(
        {
            "seq": 4,
            "at": "2026-01-01T00:00:00Z",
            "kind": "llm_interrupted",
            "iteration": 1,
            "request_id": "r",
            "run_id": "x",
            "data": {"call": 0, "chars": 12, "seq": 3, "content": "Once upon a "},
        }
    )
    assert "llm_interrupted" in render.event_line(event) and "chars=12 thread#3 text=Once upon a" in (
        render.event_line(event)
    )
    accepted = AskAccepted(request_id="r2", run_workflow_id="s-run-2", disposition="enqueued", position=1)
    assert accepted_line(accepted) == "enqueued: runs after the active request (position 1)"
    assert accepted_line(AskAccepted(request_id="r1", run_workflow_id="s-run-1")) is None
    steered = AskAccepted(request_id="r1", run_workflow_id="s-run-1", disposition="steered", input_id="in-3")
    assert accepted_line(steered) == "steered the running request r1 (input in-3)"
