"""The worker's side of the live channel: the runs' accepted items, written to it in the background.

`LiveSinkInterceptor` installs `workflows.live_extern.LIVE_EXTERN` for the worker's workflows.
The workflow calls it from its activation's thread; the item is handed to the worker's event
loop (`call_soon_threadsafe`) and written by one task: every run's pending items in one round
trip (`LiveChannel.publish`), each run's in the order they came. Writing never blocks or fails a
workflow task: a channel that cannot be reached drops the items (logged, at most once a
minute) and followers read the durable truth instead (`clients.stream`). At most
`MAX_PENDING_ITEMS` wait; past that the newest are dropped (and counted). Once a run's item
that ends its request is handed over, the run is closed: its entry is kept a short grace only
(`LiveChannel.publish(..., closed=...)`), also for its items written after (the last
`MAX_CLOSED_RUNS` runs closed are remembered). The lag from an item's arrival to its batch's
write, the items pending and dropped are the worker's metrics (`activities.worker_metrics`,
docs/metrics.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import MutableMapping
from typing import Any, cast

from temporalio.worker import Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from activities.worker_metrics import LIVE_DROPPED, LIVE_PENDING, LIVE_WRITE_LAG
from live.channel import LiveChannel
from workflows.live_extern import LIVE_EXTERN

MAX_PENDING_ITEMS = 100_000
MAX_CLOSED_RUNS = 10_000
_log = logging.getLogger(__name__)


class LiveSinkInterceptor(Interceptor):
    """Writes every run's accepted live items to `channel` (add it to a worker; the plugin does)."""

    def __init__(self, channel: LiveChannel) -> None:
        """Write to `channel` from the event loop the worker runs on (bound at its first item)."""
        self.channel = channel
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, list[bytes]] = {}
        self._closed: dict[str, None] = {}  # the runs closed lately, oldest first
        self._count = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0
        self._warned_at = 0.0
        self._oldest_at: float | None = None  # when the oldest pending item arrived (the lag's start)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """Expose the sink to this worker's workflows; no per-workflow interceptor is needed."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # a worker built outside an event loop: nothing is written
            _log.warning("live channel: the worker was built outside an event loop; not writing to it")
        externs = cast(MutableMapping[str, Any], input.unsafe_extern_functions)  # pyright: ignore[reportUnknownMemberType]
        externs[LIVE_EXTERN] = self._from_workflow
        return None

    def _from_workflow(self, workflow_id: str, item: bytes, ends: bool = False) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._add, workflow_id, item, ends)

    def _add(self, workflow_id: str, item: bytes, ends: bool) -> None:
        if ends:
            self._closed.pop(workflow_id, None)
            self._closed[workflow_id] = None
            if len(self._closed) > MAX_CLOSED_RUNS:
                del self._closed[next(iter(self._closed))]
        if self._count >= MAX_PENDING_ITEMS:
            self.dropped += 1
            LIVE_DROPPED.inc()
            return
        self._pending.setdefault(workflow_id, []).append(item)
        self._count += 1
        LIVE_PENDING.inc()
        if self._oldest_at is None:
            self._oldest_at = time.monotonic()
        if self._wake is None:
            self._wake = asyncio.Event()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write())
        self._wake.set()

    async def _write(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch, self._pending, self._count = self._pending, {}, 0
                closed = {workflow_id for workflow_id in batch if workflow_id in self._closed}
                oldest_at, self._oldest_at = self._oldest_at, None
                items = sum(map(len, batch.values()))
                LIVE_PENDING.dec(items)
                try:
                    await self.channel.publish(batch, closed)
                    if oldest_at is not None:
                        LIVE_WRITE_LAG.observe(time.monotonic() - oldest_at)
                except Exception as error:  # the channel is down: followers read the durable truth
                    self.dropped += items
                    LIVE_DROPPED.inc(items)
                    if time.monotonic() - self._warned_at > 60:
                        self._warned_at = time.monotonic()
                        _log.warning("live channel: %d items dropped (%s)", self.dropped, error)
