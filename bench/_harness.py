"""The measuring instrument behind `bench/overhead.py`: a dev server, scenarios, runs and their figures.

A scenario is one function that starts its worker(s) and returns how to start one run and
how to check its result (`Prepared`). The harness times each run (wall clock and this
process's CPU, which holds every worker and the client), runs batches concurrently for
throughput, and reads one run's history back for its size.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHandle
from temporalio.worker import Worker

from bench._dev_server import (
    BenchError,
    server_cpu_s,
)

LOCAL_ACTIVITY_MARKER = "core_local_activity"

StartRun = Callable[[str], Awaitable[WorkflowHandle[Any, Any]]]
"""Starts one run under the given workflow id and returns its handle."""

CheckResult = Callable[[Any], str | None]
"""Says what is wrong with a run's decoded result, or None when it is what the scenario expects."""


@dataclass(frozen=True)
class Prepared:
    """A scenario ready to run: its worker polls, and these start and check one run.

    `label` replaces the scenario's label when set (e.g. to name a peer's installed version).
    """

    start: StartRun
    check: CheckResult
    label: str | None = None


class Bench:
    """What a scenario's setup gets: the server address, and a place that keeps its workers running."""

    def __init__(
        self, address: str, stack: contextlib.AsyncExitStack, provider_url: str | None = None
    ) -> None:
        self.address = address
        self.provider_url = provider_url
        """The local OpenAI-compatible server's base URL (`bench/provider_server.py`), if started."""
        self._stack = stack

    def require_provider_url(self) -> str:
        """The provider server's base URL, for a provider-path scenario.

        Raises:
            BenchError: no provider server was started for this benchmark.
        """
        if self.provider_url is None:
            raise BenchError("a provider-path scenario needs the provider server (bench/provider_server.py)")
        return self.provider_url

    def task_queue(self, scenario: str) -> str:
        """A task queue of its own for the scenario's worker."""
        return f"bench-{scenario}-{uuid.uuid4().hex[:8]}"

    async def run_worker(self, worker: Worker) -> None:
        """Start the worker now; it stops when the benchmark ends."""
        await self._stack.enter_async_context(worker)


ScenarioSetup = Callable[[Bench], Awaitable[Prepared]]


@dataclass(frozen=True)
class Scenario:
    """One row of the table.

    Attributes:
        key: short name, used by `--scenarios` and in workflow ids.
        label: what the row is, as printed.
        setup: starts the worker(s); imports what it needs itself, so that an absent
            peer package only matters when its scenario is asked for.
        iterations: tool-calling iterations per run (the table's "per iteration").
        like_for_like: compared with the floor in the summary and the targets; a
            scenario that changes the work itself (e.g. local-activity tools) is not.
        floor: the key of the floor it is compared with (and paired with for throughput):
            `floor` for the scripted scenarios, `floor-provider` for those that call the
            local OpenAI-compatible server.
    """

    key: str
    label: str
    setup: ScenarioSetup
    iterations: int = 10
    like_for_like: bool = True
    floor: str = "floor"


@dataclass
class Figures:
    """What was measured for one scenario (seconds; bytes)."""

    key: str
    label: str
    iterations: int
    like_for_like: bool
    floor: str = "floor"
    walls: list[float] = field(default_factory=list[float])
    cpus: list[float] = field(default_factory=list[float])
    server_cpus: list[float] = field(default_factory=list[float])
    throughputs: list[float] = field(default_factory=list[float])
    throughput_ratios: list[float] = field(default_factory=list[float])
    history_events: int = 0
    history_bytes: int = 0
    history_json_bytes: int = 0
    activities: int = 0
    local_activities: int = 0


def median(values: list[float]) -> float:
    """The median (0 for no values)."""
    return statistics.median(values) if values else 0.0


def p90(values: list[float]) -> float:
    """The 90th percentile, inclusive method (the maximum for fewer than 10 values is close to it)."""
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def _workflow_id(key: str) -> str:
    return f"bench-{key}-{uuid.uuid4().hex[:12]}"


async def _finish(prepared: Prepared, key: str, handle: WorkflowHandle[Any, Any]) -> None:
    result = await handle.result()
    problem = prepared.check(result)
    if problem is not None:
        raise BenchError(f"scenario {key!r}: run {handle.id} did not do what it should: {problem}")


SETTLE_S = 0.1
"""Quiet time after each timed run, counted in its CPU but not its wall time: work a run leaves
behind (e.g. litellm's success callbacks, finishing the workflow task) is charged to that run,
not to the next scenario's."""


@dataclass(frozen=True)
class TimedRun:
    """One sequential run: wall and process CPU seconds, the server's CPU seconds (if known)."""

    wall: float
    cpu: float
    server_cpu: float | None
    handle: WorkflowHandle[Any, Any]


async def timed_run(prepared: Prepared, key: str, address: str = "", settle_s: float = SETTLE_S) -> TimedRun:
    """Start one run, wait for its result and check it."""
    server_start = server_cpu_s(address)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    handle = await prepared.start(_workflow_id(key))
    await _finish(prepared, key, handle)
    wall = time.perf_counter() - wall_start
    await asyncio.sleep(settle_s)
    cpu = time.process_time() - cpu_start
    server_end = server_cpu_s(address)
    server = None if server_start is None or server_end is None else server_end - server_start
    return TimedRun(wall, cpu, server, handle)


async def concurrent_runs(prepared: Prepared, key: str, count: int) -> float:
    """Start `count` runs at once and wait for all of them; returns runs per second."""
    wall_start = time.perf_counter()
    handles = await asyncio.gather(*(prepared.start(_workflow_id(key)) for _ in range(count)))
    await asyncio.gather(*(_finish(prepared, key, handle) for handle in handles))
    return count / (time.perf_counter() - wall_start)


async def read_history(handle: WorkflowHandle[Any, Any], figures: Figures) -> History:
    """Record the run's event count, history sizes and activity counts in `figures`.

    `history_bytes` is the serialized (protobuf) history, the size the server stores and
    counts against its limits (it equals the server's `history_size_bytes`);
    `history_json_bytes` is the same history as JSON (`temporal workflow show -o json`,
    payloads base64), the form the issue's first figures were taken in.
    """
    fetched = await handle.fetch_history()
    history = History(events=fetched.events)
    figures.history_events = len(history.events)
    figures.history_bytes = history.ByteSize()
    figures.history_json_bytes = len(fetched.to_json().encode())
    figures.activities = sum(
        1 for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    )
    figures.local_activities = sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
    )
    return history
