"""One Workflow Stream subscription per active run, fanned out to every viewer of that run.

Each poll of a run's stream is an Update in the run's history, so fifty viewers following a run
on their own would cost fifty times what one costs. `RunHub.follow(run_id)` gives every viewer
the run's events from its start, read from one shared feed: the first viewer starts the feed (a
`clients.stream.run_events` follower), later viewers replay what it has kept and then wait with
it. A feed without viewers stops after `idle_s` (nobody polls for nobody); a finished run's feed
is kept `linger_s` for viewers that reconnect.

With each trace event that adds messages to the run's thread, the feed reads those messages
once for every viewer (`gateway.feed.hub_reads`: the full text of an answer whose deltas a viewer
missed, tool calls with their arguments, tool results), off the stream's path: `HubItem.enriched()`
waits for them. The events' ids for resumption are derived from
durable facts by the protocol layers (`gateway.agui.render`), never from the hub's own counters, so
any gateway can resume any stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from temporalio.service import RPCError, RPCStatusCode

from clients.runs import Runs
from clients.stream import run_events, trace_reader
from contracts.stream import DeltaEvent, TraceItem
from gateway.feed.hub_reads import EventReads, HubItem

__all__ = ["HubItem", "RunHub"]

START_WAIT_S = 10.0
START_POLL_S = 0.05


@dataclass
class _Feed:
    items: list[HubItem] = field(default_factory=list[HubItem])
    done: bool = False
    error: BaseException | None = None
    viewers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    reads: EventReads | None = None
    reaper: asyncio.TimerHandle | None = None

    def publish(self, item: HubItem | None = None) -> None:
        if item is not None:
            self.items.append(item)
        self.changed.set()
        self.changed = asyncio.Event()


class RunHub:
    """Shared run feeds: `follow(run_workflow_id)` from any number of viewers, one subscription per run."""

    def __init__(self, runs: Runs, *, idle_s: float = 5.0, linger_s: float = 30.0) -> None:
        """Feeds read through `runs` (its client, store and timeouts).

        Args:
            runs: the typed client's runs scope.
            idle_s: how long a feed keeps following a run nobody watches.
            linger_s: how long a finished run's feed is kept for reconnecting viewers.
        """
        self._runs = runs
        self._idle_s = idle_s
        self._linger_s = linger_s
        self._feeds: dict[str, _Feed] = {}
        self.subscriptions_started = 0
        """How many run subscriptions this hub has started (a benchmark's and a test's measure)."""

    @property
    def active(self) -> int:
        """Feeds currently following a run."""
        return sum(1 for feed in self._feeds.values() if not feed.done)

    async def follow(self, run_workflow_id: str) -> AsyncIterator[HubItem]:
        """Every event of the run from its start, then each new one as it comes, until the run ends.

        Raises:
            RPCError: e.g. `NOT_FOUND` when no run has this workflow id.
        """
        feed = self._feed(run_workflow_id)
        feed.viewers += 1
        try:
            index = 0
            while True:
                while index < len(feed.items):
                    yield feed.items[index]
                    index += 1
                if feed.done:
                    if feed.error is not None:
                        raise feed.error
                    return
                await feed.changed.wait()
        finally:
            feed.viewers -= 1
            if feed.viewers == 0:
                self._schedule_reap(run_workflow_id, feed, self._linger_s if feed.done else self._idle_s)

    async def aclose(self) -> None:
        """Stop every feed (the gateway is shutting down)."""
        for feed in self._feeds.values():
            if feed.task is not None:
                feed.task.cancel()
            if feed.reads is not None:
                feed.reads.cancel()
        tasks = [feed.task for feed in self._feeds.values() if feed.task is not None]
        tasks += [feed.reads.task for feed in self._feeds.values() if feed.reads is not None]
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._feeds.clear()

    def _feed(self, run_workflow_id: str) -> _Feed:
        feed = self._feeds.get(run_workflow_id)
        if feed is None:
            feed = self._feeds[run_workflow_id] = _Feed()
            feed.task = asyncio.create_task(self._pump(run_workflow_id, feed))
            self.subscriptions_started += 1
        if feed.reaper is not None:
            feed.reaper.cancel()
            feed.reaper = None
        return feed

    def _schedule_reap(self, run_workflow_id: str, feed: _Feed, delay_s: float) -> None:
        def reap() -> None:
            if feed.viewers == 0 and self._feeds.get(run_workflow_id) is feed:
                del self._feeds[run_workflow_id]
                if feed.task is not None and not feed.done:
                    feed.task.cancel()

        feed.reaper = asyncio.get_running_loop().call_later(delay_s, reap)

    async def _pump(self, run_workflow_id: str, feed: _Feed) -> None:
        feed.reads = reads = EventReads(self._runs.get(run_workflow_id))
        try:
            async for event in self._events(run_workflow_id, feed):
                feed.publish(reads.item(event))
            reads.finish()
        except asyncio.CancelledError:
            reads.cancel()
            feed.error = RuntimeError("the gateway stopped following this run")
            raise
        except Exception as error:  # handed to every viewer
            feed.error = error
        finally:
            feed.done = True
            feed.publish()
            if feed.viewers == 0:
                self._schedule_reap(run_workflow_id, feed, self._linger_s)

    async def _events(self, run_workflow_id: str, feed: _Feed) -> AsyncIterator[DeltaEvent | TraceItem]:
        """The run's events; a run not started yet (just after its ask) is waited for `START_WAIT_S`."""
        client = self._runs._client  # pyright: ignore[reportPrivateUsage] - the scope's own client
        waited = 0.0
        while True:
            try:
                async for event in run_events(client, run_workflow_id, trace_reader(client, run_workflow_id)):
                    yield event
                return
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND or feed.items or waited >= START_WAIT_S:
                    raise
            await asyncio.sleep(START_POLL_S)
            waited += START_POLL_S
