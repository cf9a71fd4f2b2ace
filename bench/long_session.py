"""A long conversation, measured: 1,000 turns of a 10 KB question and a 30 KB answer, per 100 turns.

    .venv/bin/python -m bench.long_session                    # 1,000 turns, a row per 100
    .venv/bin/python -m bench.long_session --turns 300 --block 50

Real and on 127.0.0.1 only: a `temporal server start-dev` with a fresh SQLite file, the
product's `worker.py` as its own process (production settings: workflow cache on), a
payload store in a temporary folder shared by the worker and this client, the scripted
model. One session (`Sessions(...).get(id)`) is asked one question after another; each
ask's override script makes the model answer with that turn's 30 KB text. After the
last turn the histories are read back: every run of the session (it continues as new)
and every request's `ReActRun` child. Per block of turns it prints the seconds per
turn, the continue-as-new inputs of the block (their full size, also when history holds
only a claim-check reference), history bytes per turn (session and children), what the
payload store grew by per turn, and the worker's resident memory. Then the whole thread
is read back page by page and compared with what was asked and answered. Exit code 1
when an ask failed, the thread differs, or any history has a failed workflow task.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import JsonValue

from bench._histories import Histories, read_histories
from bench._process_stack import Stack, machine
from bench.load import rss_mib, sample_rss

if TYPE_CHECKING:
    from clients.session_handle import SessionHandle

QUESTION_CHARS = 10_000
ANSWER_CHARS = 30_000
TURN_TIMEOUT_S = 300.0


def text(label: str, size: int) -> str:
    """`size` characters starting with `label`, different for every label."""
    words = f"{label} lorem ipsum dolor sit amet consectetur {zlib.crc32(label.encode()) % 9973} "
    return (label + ": " + words * (size // len(words) + 1))[:size]


def question(turn: int) -> str:
    """The question of a turn (10 KB)."""
    return text(f"question {turn}", QUESTION_CHARS)


def answer(turn: int) -> str:
    """The scripted answer of a turn (30 KB)."""
    return text(f"answer {turn}", ANSWER_CHARS)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@dataclass
class Block:
    """What was measured while a block of turns ran."""

    first: int
    turns: int = 0
    seconds: float = 0.0
    store_bytes: int = 0
    rss_end: float = 0.0
    rss_peak: float = 0.0


async def ask_all(
    stack: Stack, session: SessionHandle, turns: int, block_size: int
) -> tuple[list[Block], list[str], str]:
    """Ask `turns` questions one after another; the blocks, the child workflow ids, and the first failure."""
    from contracts import AgentConfig

    assert stack.worker is not None
    store_folder = stack.work / "store"
    blocks: list[Block] = []
    children: list[str] = []
    for first in range(0, turns, block_size):
        block = Block(first)
        blocks.append(block)
        samples: list[float] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(stack.worker.pid, samples, stop))
        store_before, began = folder_bytes(store_folder), time.monotonic()
        try:
            for turn in range(first, min(first + block_size, turns)):
                config = AgentConfig(model="scripted") if turn == 0 else None
                script: dict[str, JsonValue] = {"script": [{"content": answer(turn)}]}
                accepted = await session.ask(question(turn), config=config, overrides=script)
                children.append(accepted.run_workflow_id)
                result = await asyncio.wait_for(session.await_result(accepted.request_id), TURN_TIMEOUT_S)
                if result.outcome.status != "completed" or result.result != answer(turn):
                    return blocks, children, f"turn {turn}: {result.outcome.status} {result.outcome.error}"
                block.turns += 1
        except Exception as error:  # a wedged session fails every later ask: stop at the first
            return blocks, children, f"turn {first + block.turns}: {error!r}"
        finally:
            block.seconds = time.monotonic() - began
            stop.set()
            await sampler
            block.rss_end, block.rss_peak = rss_mib(stack.worker.pid), max(samples, default=0.0)
            block.store_bytes = folder_bytes(store_folder) - store_before
        print(
            f"turns {first + 1}-{first + block.turns}: {block.seconds / block.turns:.2f} s/turn, "
            f"worker RSS {block.rss_end:.0f} MiB",
            flush=True,
        )
    return blocks, children, ""


async def thread_problem(session: SessionHandle, turns: int) -> str:
    """What differs between the session's thread and the turns asked ("" when nothing)."""
    from conversation import MessageEntry

    expected = [
        (role, content(i))
        for i in range(turns)
        for role, content in (("user", question), ("assistant", answer))
    ]
    seen = 0
    async for entry in session.thread():
        if not isinstance(entry, MessageEntry) or entry.seq != seen or seen >= len(expected):
            return f"entry {seen}: unexpected {type(entry).__name__} seq {getattr(entry, 'seq', '?')}"
        if (entry.payload.role, entry.payload.content) != expected[seen]:
            return f"entry {seen}: another message than turn {seen // 2} sent"
        seen += 1
    return "" if seen == len(expected) else f"the thread has {seen} messages, not {len(expected)}"


def table(blocks: list[Block], found: Histories) -> str:
    """One markdown row per block."""
    rows = [
        "| turns | s/turn | continue-as-new: times, input bytes min - max | history bytes/turn: "
        "session + runs = total | payload store bytes/turn | worker RSS end / peak MiB |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for block in blocks:
        if not block.turns:
            continue
        span = range(block.first, block.first + block.turns)
        session = sum(found.session_bytes[t] for t in span) / block.turns
        runs = sum(found.child_bytes[t] for t in span) / block.turns
        sizes = [(size, checked) for turn, size, checked in found.continued if turn in span]
        continued = "-"
        if sizes:
            low, high = min(size for size, _ in sizes), max(size for size, _ in sizes)
            stored = sum(checked for _, checked in sizes)
            continued = f"{len(sizes)}: {low:,} - {high:,} ({stored} claim-checked)"
        rows.append(
            f"| {span.start + 1}-{span.stop} | {block.seconds / block.turns:.2f} | {continued} "
            f"| {session:,.0f} + {runs:,.0f} = {session + runs:,.0f} "
            f"| {block.store_bytes / block.turns:,.0f} | {block.rss_end:.0f} / {block.rss_peak:.0f} |"
        )
    return "\n".join(rows)


async def main(turns: int, block_size: int) -> int:
    """Run the session, print the table; exit code 1 when anything failed."""
    work = Path(tempfile.mkdtemp(prefix="bench-long-session-"))
    stack = Stack(work)
    stack.queue = f"long-session-{uuid.uuid4().hex[:8]}"
    os.environ["REACT_PAYLOAD_STORE"] = stack.env["REACT_PAYLOAD_STORE"]
    from clients.sessions import Sessions
    from hosting.connection import connect
    from payloads.blob_store import blob_store_from_env

    session_id = f"bench-long-session-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    try:
        await stack.start_server()
        await stack.start_worker()
        client = await connect(stack.address)
        store = blob_store_from_env()
        session = Sessions(client, task_queue=stack.queue, store=store).get(session_id)
        blocks, children, failure = await ask_all(stack, session, turns, block_size)
        found = await read_histories(client, session_id, children, store)
        asked = sum(block.turns for block in blocks)
        try:
            thread = await thread_problem(session, asked)
        except Exception as error:  # e.g. a wedged session whose queries fail
            thread = f"could not be read: {error!r}"
    finally:
        stack.stop()
    print(f"\n{machine()}; --turns {turns} --block {block_size}, {time.monotonic() - began:.0f} s in all\n")
    print(table(blocks, found))
    print(f"\nasks completed: {asked} of {turns}; thread: {thread or f'{2 * asked} messages, in order'}")
    print(f"continue-as-new: {len(found.continued)} times; failed workflow tasks: {found.task_failures}")
    if found.last_turn:
        print(f"\nthe last turn's {sum(found.last_turn.values()):,} history bytes by event type:")
        print(", ".join(f"{name} {size:,}" for name, size in found.last_turn.most_common()))
    problems = [failure, thread and f"thread: {thread}"]
    problems += [f"{found.task_failures} failed workflow tasks"] if found.task_failures else []
    problems = [problem for problem in problems if problem]
    for problem in problems:
        print(f"PROBLEM: {problem}")
    if problems:
        print(f"logs, database and payload store in {work}")
        return 1
    stack.remove_work()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=1000, help="turns to ask (default 1000)")
    parser.add_argument("--block", type=int, default=100, help="turns per row of the table (default 100)")
    args = parser.parse_args()
    if args.turns < 1 or args.block < 1:
        parser.error("--turns and --block must be at least 1")
    if sys.platform != "linux":
        raise SystemExit("bench.long_session reads the worker's memory from /proc: Linux only")
    sys.exit(asyncio.run(main(args.turns, args.block)))
