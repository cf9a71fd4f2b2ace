"""What a streamed answer costs in history, per delta schedule, side by side in one run.

    .venv/bin/python -m bench.stream_cost                 # 10 time-to-first-token samples per row
    .venv/bin/python -m bench.stream_cost --samples 30

Real and on 127.0.0.1 only: a dev server and the product's worker (`testing.AgentTestEnvironment`,
in this process, workflow cache on as in production) and this process as the client, following
each run with `clients.stream.run_events` (what `RunHandle.events` runs; one follower, the
product's default poll cooldown). The model is the scripted one, streaming a 2,000-token answer
(8,000 characters in 2,000 pieces of 4, one every 5 ms: about 10 s); unstreamed, it waits as long
and answers whole. Each row is one schedule of `activities.llm.delta_publisher`; the rows before the
default one are earlier schedules, set for their rows only (the module's constants), so every
row runs on the same server, worker and client, one after the other:

- time to first token: start call to the first delta at the client (a 400-character answer,
  `--samples` runs, p50 and p99);
- text gaps: the longest wait between two deltas at the client while the answer streams (p99
  and max), which says whether text moves at least twice a second;
- history: publish signals, poll Updates, events and bytes of the 2,000-token run, and its
  bytes over the unstreamed run's (the target: at most x2.5).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType

from activities.llm import delta_publisher
from bench._process_stack import machine
from bench.live import answer_turn, percentile
from clients.stream import run_events, trace_reader
from contracts import AgentConfig
from contracts.limits import DEFAULT_STREAM_INTERVAL_S
from contracts.stream import DeltaEvent
from testing import AgentTestEnvironment

ANSWER_2000_TOKENS = ("word " * 1_600)[:8_000]
SHORT = ANSWER_2000_TOKENS[:400]


@dataclass(frozen=True)
class Schedule:
    """One row: the first interval (`stream_interval_s`), how it grows, where it settles."""

    label: str
    interval_s: float
    growth: float
    steady_s: float


SCHEDULES = (
    Schedule("fixed 0.1 s (before)", 0.1, 1.0, 0.1),
    Schedule("fixed 0.25 s", 0.25, 1.0, 0.25),
    Schedule("fixed 0.5 s", 0.5, 1.0, 0.5),
    Schedule(
        f"{DEFAULT_STREAM_INTERVAL_S:g} s x{delta_publisher.INTERVAL_GROWTH:g} to "
        f"{delta_publisher.STEADY_INTERVAL_S:g} s (default)",
        DEFAULT_STREAM_INTERVAL_S,
        delta_publisher.INTERVAL_GROWTH,
        delta_publisher.STEADY_INTERVAL_S,
    ),
)


def use(schedule: Schedule) -> None:
    """Make `schedule` the delta publisher's (the worker runs in this process)."""
    delta_publisher.INTERVAL_GROWTH = schedule.growth
    delta_publisher.STEADY_INTERVAL_S = schedule.steady_s


async def follow(agents: AgentTestEnvironment, content: str, schedule: Schedule | None) -> dict[str, Any]:
    """Run one answer (None: unstreamed); the client-side arrival times and the run's history."""
    config = AgentConfig(
        model="scripted",
        script=[answer_turn(content, schedule is not None)],
        stream=schedule is not None,
        stream_interval_s=schedule.interval_s if schedule is not None else 0.1,
    )
    began = time.perf_counter()
    run = await agents.runs.start("Tell me a story.", config)
    arrivals: list[float] = []
    async for event in run_events(
        agents.client, run.workflow_id, trace_reader(agents.client, run.workflow_id)
    ):
        if isinstance(event, DeltaEvent):
            arrivals.append(time.perf_counter() - began)
        elif event.event.kind == "llm_completed" and not arrivals:
            arrivals.append(time.perf_counter() - began)
    result = await run.result()
    if result.answer != content:
        raise RuntimeError("the answer differs from the script")
    history = await agents.client.get_workflow_handle(run.workflow_id).fetch_history()
    kinds = [event.event_type for event in history.events]
    return {
        "ttft": arrivals[0],
        "gaps": [later - earlier for earlier, later in itertools.pairwise(arrivals)],
        "signals": kinds.count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
        "polls": kinds.count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
        "events": len(history.events),
        "bytes": sum(event.ByteSize() for event in history.events),
    }


async def row(agents: AgentTestEnvironment, schedule: Schedule | None, samples: int) -> dict[str, Any]:
    """One row: time to first token over `samples` short runs, then the 2,000-token run."""
    if schedule is not None:
        use(schedule)
    firsts = [(await follow(agents, SHORT, schedule))["ttft"] for _ in range(samples)]
    long = await follow(agents, ANSWER_2000_TOKENS, schedule)
    return {**long, "firsts": firsts}


async def main(samples: int) -> int:
    """Start the environment, measure every row, print the table."""
    print(f"# bench.stream_cost: {machine()}")
    saved = (delta_publisher.INTERVAL_GROWTH, delta_publisher.STEADY_INTERVAL_S)
    async with AgentTestEnvironment(max_cached_workflows=1_000) as agents:
        await follow(agents, SHORT, SCHEDULES[-1])  # warm-up
        unstreamed = await row(agents, None, samples)
        rows = [(s.label, await row(agents, s, samples)) for s in SCHEDULES]
    delta_publisher.INTERVAL_GROWTH, delta_publisher.STEADY_INTERVAL_S = saved
    print(
        f"\nA 2,000-token answer (8,000 chars, 2,000 pieces, one per 5 ms), a follower; TTFT: {samples} runs"
    )
    head = (
        "schedule",
        "TTFT p50",
        "p99",
        "gap p99",
        "gap max",
        "signals",
        "polls",
        "events",
        "bytes",
        "x unstr.",
    )
    widths = (32, 9, 7, 8, 8, 8, 6, 7, 10, 8)
    print("  " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    for label, measured in [*rows, ("streaming off", unstreamed)]:
        gaps = measured["gaps"] or [0.0]
        cells = (
            label,
            f"{statistics.median(measured['firsts']) * 1e3:.0f} ms",
            f"{percentile(measured['firsts'], 0.99) * 1e3:.0f}",
            f"{percentile(gaps, 0.99) * 1e3:.0f} ms",
            f"{max(gaps) * 1e3:.0f}",
            f"{measured['signals']}",
            f"{measured['polls']}",
            f"{measured['events']}",
            f"{measured['bytes']:,}",
            f"x{measured['bytes'] / unstreamed['bytes']:.2f}",
        )
        print("  " + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10)
    sys.exit(asyncio.run(main(parser.parse_args().samples)))
