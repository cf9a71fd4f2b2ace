"""The LLM message cache, measured: bytes per LLM call with and without it, for 10, 50 and 200 iterations.

    .venv/bin/python -m bench.message_cache                         # 10, 50 and 200 iterations
    .venv/bin/python -m bench.message_cache --iterations 50 --result-chars 4000

Real and on 127.0.0.1 only: a `temporal server start-dev` with a fresh SQLite file, the
product's `worker.py` as its own process (production settings: workflow cache on), a
payload store in a temporary folder, the scripted model. Each run calls the `echo` tool
once per iteration (arguments and result of `--result-chars` characters each, different
every round), then answers. Then its history is read back.

"With the cache" is the product as it runs: each LLM activity input as history holds
it (inline messages, `PrefixRef`, `MessageRef`s). "Without" is what the same input
would be with every message inline (what an LLM activity that is sent the whole
conversation receives): each recorded request's references are resolved from the
payload store and the request is serialized again by the product's payload converter.
There is no switch that turns the cache off; the workflow is not changed for this.
Exit code 1 when a run did not complete as scripted or had a cache miss.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from bench._histories import payload_data
from bench._process_stack import Stack, machine

if TYPE_CHECKING:
    from payloads.blob_store import BlobStore

LLM_ACTIVITY = "llm_call"


def script(iterations: int, result_chars: int) -> list[dict[str, Any]]:
    """`iterations` rounds of one `echo` call (a different text each round), then the answer `done`."""
    return [
        *(
            {"tool_calls": [{"name": "echo", "arguments": {"text": f"round {i:03d} " + "x" * result_chars}}]}
            for i in range(iterations)
        ),
        {"content": "done"},
    ]


@dataclass
class Call:
    """One LLM call: its input's bytes with the cache and with every message inline."""

    cached: int
    inline: int
    messages: int


@dataclass
class Measured:
    """One run: its LLM calls, history bytes per iteration, the whole history, the cache misses."""

    iterations: int
    calls: list[Call]
    per_iteration: list[int]
    history_bytes: int
    misses: int
    recoded_differently: int
    """Requests whose bytes in history differ from the converter's (the figures would not compare)."""


async def measure(events: list[HistoryEvent], iterations: int, store: BlobStore) -> Measured:
    """Read the LLM inputs out of a run's history and rebuild each with every message inline."""
    from activities.llm.message_cache import MessageCache
    from contracts import LLMRequest
    from payloads.converter import ProductPayloadConverter

    converter, cache = ProductPayloadConverter(), MessageCache(store)
    calls: list[Call] = []
    per_iteration: list[int] = []
    misses = recoded_differently = 0
    for event in events:
        scheduled = event.activity_task_scheduled_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and scheduled.activity_type.name == LLM_ACTIVITY
        ):
            data = await payload_data(scheduled.input.payloads[0], store)
            request = LLMRequest.model_validate_json(data)
            messages = await cache.resolve(request)
            inline = request.model_copy(update={"prefix": None, "messages": messages})
            [payload] = converter.to_payloads([inline])
            [recoded] = converter.to_payloads([request])
            recoded_differently += recoded.data != data
            calls.append(Call(cached=len(data), inline=len(payload.data), messages=len(messages)))
            per_iteration.append(0)
        failure = event.activity_task_failed_event_attributes.failure
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
            and failure.application_failure_info.type == "message_cache_miss"
        ):
            misses += 1
        if per_iteration:  # events from one LLM call to the next: that iteration's history
            per_iteration[-1] += event.ByteSize()
    history_bytes = sum(event.ByteSize() for event in events)
    return Measured(iterations, calls, per_iteration, history_bytes, misses, recoded_differently)


async def one_run(
    client: Client, queue: str, iterations: int, result_chars: int
) -> tuple[str, list[HistoryEvent]]:
    """Run `iterations` tool rounds; what is wrong with the result ("" if nothing) and the history."""
    from clients.runs import Runs
    from contracts import AgentConfig

    config = AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": script(iterations, result_chars),
            "tools": ["echo"],
            "max_iterations": iterations + 1,
        }
    )
    run = await Runs(client, task_queue=queue).start(f"Echo {iterations} times.", config)
    result = await run.result()
    wrong = ""
    if result.status != "completed" or result.result != "done":
        wrong = f"{iterations} iterations: {result.status} {result.outcome.error}"
    history = await client.get_workflow_handle(run.workflow_id).fetch_history()
    return wrong, list(history.events)


def _spread(values: list[int]) -> str:
    return f"{min(values):,} - {max(values):,}" if values else "-"


def table(runs: list[Measured]) -> str:
    """One markdown row per run length."""
    rows = [
        "| iterations | LLM calls | bytes per call with the cache: first / mean / last | "
        "without: first / mean / last | without / with | with the cache, calls 2 to n-1: min - max | "
        "history bytes per iteration, 2 to n-1: min - max | history bytes, whole run | "
        "LLM inputs in all: with / without |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        cached = [call.cached for call in run.calls]
        inline = [call.inline for call in run.calls]
        rows.append(
            f"| {run.iterations} | {len(run.calls)} "
            f"| {cached[0]:,} / {statistics.mean(cached):,.0f} / {cached[-1]:,} "
            f"| {inline[0]:,} / {statistics.mean(inline):,.0f} / {inline[-1]:,} "
            f"| x{sum(inline) / sum(cached):.1f} | {_spread(cached[1:-1])} "
            f"| {_spread(run.per_iteration[1:-1])} | {run.history_bytes:,} "
            f"| {sum(cached):,} / {sum(inline):,} |"
        )
    return "\n".join(rows)


async def main(lengths: list[int], result_chars: int) -> int:
    """Run each length once, print the table; exit code 1 when a run went wrong."""
    work = Path(tempfile.mkdtemp(prefix="bench-message-cache-"))
    stack = Stack(work)
    stack.queue = f"message-cache-{uuid.uuid4().hex[:8]}"
    os.environ["REACT_PAYLOAD_STORE"] = stack.env["REACT_PAYLOAD_STORE"]
    from hosting.connection import connect
    from payloads.blob_store import blob_store_from_env

    began = time.monotonic()
    problems: list[str] = []
    measured: list[Measured] = []
    try:
        await stack.start_server()
        await stack.start_worker()
        client = await connect(stack.address)
        store = blob_store_from_env()
        for iterations in lengths:
            wrong, events = await one_run(client, stack.queue, iterations, result_chars)
            run = await measure(events, iterations, store)
            measured.append(run)
            expected = list(range(1, 2 * iterations + 2, 2))
            if [call.messages for call in run.calls] != expected:
                wrong = wrong or f"{iterations} iterations: the calls resolve to other message counts"
            problems += [wrong] if wrong else []
            problems += [f"{iterations} iterations: {run.misses} cache misses"] if run.misses else []
            if run.recoded_differently:
                problems.append(f"{iterations} iterations: the converter re-serializes requests differently")
            print(f"{iterations} iterations: {len(run.calls)} LLM calls measured", flush=True)
    finally:
        stack.stop()
    print(
        f"\n{machine()}; --iterations {','.join(map(str, lengths))} --result-chars {result_chars}, ", end=""
    )
    print(f"{time.monotonic() - began:.0f} s in all\n")
    print(table(measured))
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
    parser.add_argument(
        "--iterations", default="10,50,200", help="run lengths, comma-separated (default 10,50,200)"
    )
    parser.add_argument(
        "--result-chars", type=int, default=1000, help="characters of each tool call's text (default 1000)"
    )
    args = parser.parse_args()
    try:
        run_lengths = [int(part) for part in args.iterations.split(",")]
    except ValueError:
        parser.error(f"--iterations takes whole numbers separated by commas, not {args.iterations!r}")
    if not all(1 <= length <= 999 for length in run_lengths) or not 1 <= args.result_chars <= 100_000:
        parser.error("each run length must be 1..999 and --result-chars 1..100000")
    sys.exit(asyncio.run(main(run_lengths, args.result_chars)))
