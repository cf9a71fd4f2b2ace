"""One Workflow Stream subscription per active run, fanned out to every viewer of that run.

Each poll of a run's stream is an Update in the run's history, so fifty viewers following a run
on their own would cost fifty times what one costs. `RunHub.follow(run_id)` gives every viewer
the run's events from its start, read from one shared feed: the first viewer starts the feed (a
`clients.stream.run_events` follower), later viewers replay what it has kept and then wait with
it. A feed without viewers stops after `idle_s` (nobody polls for nobody); a finished run's feed
is kept `linger_s` for viewers that reconnect.

With each trace event that adds messages to the run's thread (an LLM call's answer, a tool's
result, the run's end), the feed reads those messages once (a query: no history) and hands them
to every viewer (`HubItem.entries`): the full text of an answer whose deltas a viewer missed,
tool calls with their arguments, tool results. The events' ids for resumption are derived from
durable facts by the protocol layers (`gateway.agui_render`), never from the hub's own counters, so
any gateway can resume any stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from temporalio.service import RPCError, RPCStatusCode

from clients.runs import RunHandle, Runs
from clients.stream import run_events, trace_reader
from contracts import RunState, TraceEvent
from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry

__all__ = ["HubItem", "RunHub"]

T = TypeVar("T")

ENTRY_KINDS = frozenset(
    {
        "llm_completed",
        "llm_interrupted",
        "tool_completed",
        "input_injected",
        "request_completed",
        "request_failed",
        "request_cancelled",
    }
)
"""Trace events after which the run's thread may hold new messages."""
QUERY_ATTEMPTS = 3
START_WAIT_S = 10.0
START_POLL_S = 0.05
STATE_KINDS = frozenset({"state_effects_applied", "request_completed", "request_failed", "request_cancelled"})
"""Trace events after which the feed reads the run's state once (agent state, outcome and usage)."""


@dataclass(frozen=True)
class HubItem:
    """One event of a run, with the thread messages the run gained by it (for trace events above)."""

    event: DeltaEvent | TraceItem
    entries: tuple[MessageEntry, ...] = ()
    state: RunState | None = None
    """The run's state after a `STATE_KINDS` trace event (its agent state, outcome and usage)."""


@dataclass
class _Feed:
    items: list[HubItem] = field(default_factory=list[HubItem])
    done: bool = False
    error: BaseException | None = None
    viewers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
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
        tasks = [feed.task for feed in self._feeds.values() if feed.task is not None]
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
        run = self._runs.get(run_workflow_id)
        thread = _RunThread(run)
        try:
            async for event in self._events(run_workflow_id, feed):
                entries: tuple[MessageEntry, ...] = ()
                state: RunState | None = None
                if isinstance(event, TraceItem):
                    kind = event.event.kind
                    if kind in ENTRY_KINDS:
                        entries = await _patiently(partial(thread.entries_for, event.event), ())
                    if kind in STATE_KINDS:
                        state = await _patiently(run.state, None)
                feed.publish(HubItem(event, entries, state))
        except asyncio.CancelledError:
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


async def _patiently(read: Callable[[], Awaitable[T]], fallback: T) -> T:
    """A query the feed enriches an event with, tried `QUERY_ATTEMPTS` times.

    A busy worker lets queries time out; without an answer the event goes out bare (the viewers
    still have the deltas).
    """
    for attempt in range(QUERY_ATTEMPTS):
        try:
            return await read()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                break
            await asyncio.sleep(0.2 * (attempt + 1))
    return fallback


class _RunThread:
    """The run's thread messages, handed out in seq order to the trace events that added them.

    A feed that starts late reads the thread as it is now, past the event it is handing out: each
    event gets the messages up to the one it added (an LLM call's answer: the next assistant
    message; a tool's result: its tool message; an injected input: its user message), so an
    answer always arrives with its own `llm_completed`, however late the feed started.
    """

    def __init__(self, run: RunHandle) -> None:
        self._run = run
        self._known: list[MessageEntry] = []
        self._next_seq = 0  # a run's thread: its starting context (one op entry), then its messages
        self._handed = 0
        self._answers = 0

    async def entries_for(self, event: TraceEvent) -> tuple[MessageEntry, ...]:
        if event.kind in ("llm_completed", "llm_interrupted"):
            wanted = self._answers + 1
            index = await self._find(lambda found: _nth_assistant(found, wanted))
            self._answers = wanted
        elif event.kind == "tool_completed":
            index = await self._find(
                lambda found: _first(found, lambda e: e.payload.tool_call_id == event.call_id)
            )
        elif event.kind == "input_injected":
            seq = event.data.get("seq")
            index = await self._find(lambda found: _first(found, lambda e: e.seq == seq))
        else:  # the run's end: everything
            await self._read()
            index = len(self._known) - 1
        if index is None or index < self._handed:
            return ()
        out = tuple(self._known[self._handed : index + 1])
        self._handed = index + 1
        return out

    async def _find(self, locate: Callable[[list[MessageEntry]], int | None]) -> int | None:
        index = locate(self._known)
        if index is None:
            await self._read()
            index = locate(self._known)
        return index

    async def _read(self) -> None:
        next_seq: int | None = self._next_seq
        while next_seq is not None:
            page = await self._run.thread_page(next_seq)
            self._known.extend(e for e in page.entries if isinstance(e, MessageEntry))
            if page.entries:
                self._next_seq = page.entries[-1].seq + 1
            next_seq = page.next_seq


def _nth_assistant(entries: list[MessageEntry], n: int) -> int | None:
    seen = 0
    for index, entry in enumerate(entries):
        if entry.payload.role == "assistant":
            seen += 1
            if seen == n:
                return index
    return None


def _first(entries: list[MessageEntry], match: Callable[[MessageEntry], bool]) -> int | None:
    return next((index for index, entry in enumerate(entries) if match(entry)), None)
