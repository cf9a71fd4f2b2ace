"""Live runs, measured: time to first token, interrupt-to-next-call latency, and the batch interval.

    .venv/bin/python -m bench.live                   # 30 samples each, the interval table
    .venv/bin/python -m bench.live --samples 10 --skip-table

Real and on 127.0.0.1 only: a `temporal server start-dev` with a fresh SQLite file and the
product's `worker.py` as its own process (production settings: workflow cache on), and this
process as the client, subscribing to each run's Workflow Stream as an application would
(`clients.stream.run_events`, what `RunHandle.events` runs). The model is the scripted one,
streaming (its pieces come from the worker's own event loop, no HTTP, no litellm): what is
measured is the product and Temporal, not a provider. An answer is 4 characters every 5 ms;
unstreamed, the scripted model waits as long, then answers whole.

1. Time to first token: from the client's `start_workflow` call to the first `DeltaEvent`
   arriving at the client, for a run whose first piece is ready at once (p50 and p99 over
   the samples; with 30 samples p99 is the largest but one).
2. Interrupt to next call: a run streams a long answer; once the client has seen some of it,
   it sends `steer(mode="interrupt")` and times until the `llm_started` event of the next
   call arrives on the stream (client-side), and from the Update's acceptance to the next
   `llm_call` being scheduled (server-side, from history). The next call streams for 0.5 s:
   a run that ends before the subscriber's next poll is read back by query instead, which
   took about 1 s here (a query to a closed workflow), and would measure that, not the steer.
3. Batch interval: a 2,000-token answer (8,000 characters in 2,000 pieces of 4, one every
   5 ms: about 10 s) per `stream_interval_s`, and with streaming off: time to first token,
   signals and history bytes of the run, and the run's duration.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from bench._process_stack import Stack, machine
from clients.stream import run_events, trace_reader
from contracts import WORKFLOW_TYPE, Ack, AgentConfig, RunInput, RunResult, ScriptTurn, SteerInput
from contracts.stream import DeltaEvent, TraceItem

POLL_COOLDOWN_S = 0.05
ANSWER_2000_TOKENS = ("word " * 1_600)[:8_000]
INTERVALS = (0.02, 0.05, 0.1, 0.25, 0.5, 1.0)


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def answer_turn(content: str, stream: bool) -> ScriptTurn:
    """The scripted answer, 4 characters every 5 ms; unstreamed, the same time as one wait."""
    if stream:
        return ScriptTurn(content=content, chunk_chars=4, chunk_delay_s=0.005)
    return ScriptTurn(content=content, delay_s=len(content) / 4 * 0.005)


def spread(seconds: list[float]) -> str:
    """p50 and p99 in milliseconds."""
    return f"p50 {statistics.median(seconds) * 1e3:7.1f}   p99 {percentile(seconds, 0.99) * 1e3:7.1f}"


async def start(client: Client, queue: str, config: AgentConfig) -> WorkflowHandle[Any, RunResult]:
    """Start one run of the scripted model."""
    return await client.start_workflow(
        WORKFLOW_TYPE,
        RunInput(query="Tell me a story.", config=config),
        id=f"live-{uuid.uuid4().hex[:10]}",
        task_queue=queue,
        result_type=RunResult,
    )


def events(client: Client, workflow_id: str) -> AsyncIterator[DeltaEvent | TraceItem]:
    """The run's stream events until the run ends, as the typed client reads them (`RunHandle.events`)."""
    return run_events(client, workflow_id, trace_reader(client, workflow_id), poll_cooldown_s=POLL_COOLDOWN_S)


async def time_to_first_token(client: Client, queue: str, *, stream: bool, interval_s: float = 0.1) -> float:
    """Seconds from the start call to the first delta (streaming) or the `llm_completed` event."""
    turn = answer_turn(ANSWER_2000_TOKENS[:400], stream)
    config = AgentConfig(model="scripted", script=[turn], stream=stream, stream_interval_s=interval_s)
    began = time.perf_counter()
    handle = await start(client, queue, config)
    async for event in events(client, handle.id):
        if isinstance(event, DeltaEvent) or event.event.kind == "llm_completed":
            elapsed = time.perf_counter() - began
            await handle.result()
            return elapsed
    raise RuntimeError("the run ended without a first token")


async def interrupt_latency(client: Client, queue: str) -> tuple[float, float]:
    """(client-side, server-side) seconds from an interrupting steer to the next LLM call."""
    long = ScriptTurn(content=ANSWER_2000_TOKENS, chunk_chars=4, chunk_delay_s=0.005)
    # The next call streams too (0.5 s), so the run is still live when its `llm_started` goes out.
    after = answer_turn(ANSWER_2000_TOKENS[:400], True)
    config = AgentConfig(model="scripted", script=[long, after], stream=True)
    handle = await start(client, queue, config)
    sent = 0.0
    client_side: float | None = None
    async for event in events(client, handle.id):
        if isinstance(event, DeltaEvent) and not sent:
            sent = time.perf_counter()
            ack = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                "steer", SteerInput(content="Shorter.", mode="interrupt"), result_type=Ack
            )
            if ack.mode != "interrupt":
                raise RuntimeError(f"the steer did not interrupt: {ack}")
        if (
            isinstance(event, TraceItem)
            and event.event.kind == "llm_started"
            and event.event.data.get("call") == 1
        ):
            client_side = time.perf_counter() - sent
    await handle.result()
    if client_side is None:
        raise RuntimeError("no second LLM call was seen")
    accepted: float | None = None
    async for item in handle.fetch_history_events():
        at = item.event_time.ToMicroseconds() / 1e6
        if item.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted = at
        elif accepted is not None and item.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            return client_side, at - accepted
    raise RuntimeError("no LLM call was scheduled after the steer")


async def interval_row(client: Client, queue: str, interval_s: float | None) -> dict[str, float]:
    """One row of the batch-interval table (None: streaming off)."""
    turn = answer_turn(ANSWER_2000_TOKENS, interval_s is not None)
    config = AgentConfig(
        model="scripted", script=[turn], stream=interval_s is not None, stream_interval_s=interval_s or 0.1
    )
    began = time.perf_counter()
    handle = await start(client, queue, config)
    first: float | None = None
    async for event in events(client, handle.id):
        done = isinstance(event, TraceItem) and event.event.kind == "llm_completed"
        if first is None and (isinstance(event, DeltaEvent) or done):
            first = time.perf_counter() - began
    result = await handle.result()
    duration = time.perf_counter() - began
    if result.answer != ANSWER_2000_TOKENS:
        raise RuntimeError("the answer differs from the script")
    history = await handle.fetch_history()
    signals = sum(
        1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    )
    updates = sum(
        1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )
    return {
        "ttft": first or 0.0,
        "signals": signals,
        "updates": updates,
        "events": len(history.events),
        "bytes": sum(event.ByteSize() for event in history.events),
        "duration": duration,
    }


async def main(samples: int, table: bool) -> int:
    """Start the stack, measure, print."""
    from hosting.connection import connect

    print(f"# bench.live: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-live-") as work:
        stack = Stack(Path(work))
        try:
            await stack.start_server()
            await stack.start_worker()
            client = await connect(stack.address)
            await time_to_first_token(client, stack.queue, stream=True)  # warm-up (litellm, caches)
            ttft = [await time_to_first_token(client, stack.queue, stream=True) for _ in range(samples)]
            off = [await time_to_first_token(client, stack.queue, stream=False) for _ in range(samples)]
            print(f"\nTime to first token, {samples} runs each (ms):")
            print(f"  streaming on  (first delta arrives):       {spread(ttft)}")
            print(f"  streaming off (400-char answer completed): {spread(off)}")
            pairs = [await interrupt_latency(client, stack.queue) for _ in range(samples)]
            seen, server = [p[0] for p in pairs], [p[1] for p in pairs]
            print(f"\nInterrupting steer to the next LLM call, {samples} runs (ms):")
            print(f"  client (steer sent -> next llm_started on the stream): {spread(seen)}")
            print(f"  server (Update accepted -> next llm_call scheduled):   {spread(server)}")
            if table:
                print("\nBatch interval, a 2,000-token answer (8,000 chars in 2,000 pieces, one per 5 ms):")
                head = ("interval", "TTFT ms", "signals", "polls", "events", "history bytes", "run s")
                print("  " + " ".join(f"{h:>{w}}" for h, w in zip(head, (9, 8, 8, 6, 7, 14, 6), strict=True)))
                for interval in (*INTERVALS, None):
                    row = await interval_row(client, stack.queue, interval)
                    label = f"{interval:g} s" if interval is not None else "off"
                    print(
                        f"  {label:>9} {row['ttft'] * 1e3:8.1f} {row['signals']:8.0f} {row['updates']:6.0f} "
                        f"{row['events']:7.0f} {row['bytes']:14,.0f} {row['duration']:6.2f}"
                    )
        finally:
            stack.stop()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--skip-table", action="store_true")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.samples, not arguments.skip_table)))
