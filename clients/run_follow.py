"""Following one run: one loop over its sources, one decoder, every event once and in order.

A run's events come from one of two sources (`EntrySource`): the live channel
(`clients.channel_entries`, when the deployment has one) or the run's Workflow Stream
(`clients.stream_polls.StreamEntries`). `RunFollower.events` reads them in turn: a source that
is lost (`SourceLost`: a channel that fails, or that has nothing of the run because its worker
writes to none) hands over to the next, without what was yielded already. Whatever the
source, an entry is decoded once (`STREAM_EVENTS`; one that does not decode, a newer worker's
kind, is skipped and told to its source), a delta is yielded once (by call, attempt, seq: a
worker may write one twice), a trace event once and in seq order (`TraceGaps`: events the
source never had, dropped by the stream's truncation or by a worker that died before it wrote
them, are read back from the `trace` query when a later one shows the gap, or at the end), and
where two writers share the source (`EntrySource.interleaved`: the channel), a call's deltas
wait for its `llm_started` (`DeltasAfterStart`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

from pydantic import TypeAdapter, ValidationError

from contracts import Trace
from contracts.run import TERMINAL_KINDS
from contracts.stream import DeltaEvent, StreamEvent, TraceItem

__all__ = [
    "STREAM_EVENTS",
    "DeltasAfterStart",
    "EntrySource",
    "RunFollower",
    "SourceLost",
    "TraceGaps",
    "TraceReader",
]

STREAM_EVENTS: TypeAdapter[DeltaEvent | TraceItem] = TypeAdapter(StreamEvent)
"""The one decoder of a run's stream entries, whatever their source."""
TraceReader = Callable[[], Awaitable[Trace]]
_log = logging.getLogger(__name__)


class SourceLost(Exception):
    """The source cannot follow this run (any more): the next source takes over."""


class EntrySource(Protocol):
    """Where a run's stream entries come from: the live channel or the run's Workflow Stream."""

    @property
    def interleaved(self) -> bool:
        """Whether two writers share it, so a call's deltas may come before its `llm_started`."""
        ...

    def entries(self, ended: Callable[[], bool]) -> AsyncIterator[tuple[str, bytes]]:
        """(key, JSON) of each entry in order, until `ended()` or the run has closed.

        Raises:
            SourceLost: the source cannot follow the run; nothing it yielded is yielded again.
        """
        ...

    def undecodable(self, key: str, reason: str) -> None:
        """Entry `key` was not a stream event (`reason`): count it where the source counts such."""
        ...


class TraceGaps:
    """Yields each trace event once, in seq order, filling gaps the source left from `read`."""

    def __init__(self, read: TraceReader) -> None:
        self._read = read
        self.last_seq = 0
        self.ended = False

    async def before(self, item: TraceItem | None) -> list[TraceItem]:
        """The missed trace events before `item` (None: the end), empty when nothing is missed."""
        if item is not None and item.event.seq <= self.last_seq + 1:
            return []
        if item is None and self.ended:
            return []
        upto = item.event.seq if item is not None else None
        missed = [
            e for e in (await self._read()).events if e.seq > self.last_seq and (upto is None or e.seq < upto)
        ]
        return [self.seen(TraceItem(event=e)) for e in sorted(missed, key=lambda e: e.seq)]

    def seen(self, item: TraceItem) -> TraceItem:
        """Note `item` as yielded."""
        self.last_seq = item.event.seq
        self.ended = self.ended or item.event.kind in TERMINAL_KINDS
        return item


class DeltasAfterStart:
    """Holds an LLM call's deltas until its `llm_started` trace event has been yielded.

    Two writers share a channel's entry: the worker writes trace items in the background, the
    LLM activity its deltas at once, so under load a call's first deltas can land before the
    trace items that precede them (`llm_started`, even `request_started`, which clears a
    follower's text). Deltas of a call whose start was never seen are dropped at the end (its
    text is in the thread).
    """

    def __init__(self) -> None:
        self._started: set[int] = set()
        self._held: list[DeltaEvent] = []

    def delta(self, delta: DeltaEvent) -> list[DeltaEvent]:
        """`delta` if its call has started, else nothing (held)."""
        if delta.call in self._started:
            return [delta]
        self._held.append(delta)
        return []

    def trace(self, item: TraceItem) -> list[DeltaEvent]:
        """The deltas held for the call `item` starts (none for any other trace event)."""
        call = item.event.data.get("call")
        if item.event.kind != "llm_started" or not isinstance(call, int):
            return []
        self._started.add(call)
        ready = [d for d in self._held if d.call == call]
        self._held = [d for d in self._held if d.call != call]
        return ready


class RunFollower:
    """One run's events from its sources, each once and in order (see the module docstring)."""

    def __init__(self, workflow_id: str, read_trace: TraceReader) -> None:
        self._workflow_id = workflow_id
        self._gaps = TraceGaps(read_trace)
        self._deltas: set[tuple[int, int, int]] = set()
        self._order = DeltasAfterStart()

    async def events(self, sources: Sequence[EntrySource]) -> AsyncIterator[DeltaEvent | TraceItem]:
        """The run's events until it has ended, from the first source that is not lost."""
        for source in sources:
            try:
                async for key, data in source.entries(lambda: self._gaps.ended):
                    for event in await self._take(source, key, data):
                        yield event
                break
            except SourceLost as lost:  # a source that failed says so itself, at its own level
                _log.debug("following %s from its next source (%s)", self._workflow_id, lost)
        for event in self._traces(await self._gaps.before(None)):
            yield event

    async def _take(self, source: EntrySource, key: str, data: bytes) -> list[DeltaEvent | TraceItem]:
        """What entry `key` adds to the run's events, in order."""
        try:
            event = STREAM_EVENTS.validate_json(data)
        except ValidationError as error:
            source.undecodable(key, f"not a stream event: {error.error_count()} errors")
            return []
        if isinstance(event, DeltaEvent):
            delta_key = (event.call, event.attempt, event.seq)
            if delta_key in self._deltas:
                return []
            self._deltas.add(delta_key)
            return [*self._order.delta(event)] if source.interleaved else [event]
        traces = await self._gaps.before(event)
        if event.event.seq > self._gaps.last_seq:
            traces.append(self._gaps.seen(event))
        return self._traces(traces)

    def _traces(self, traces: list[TraceItem]) -> list[DeltaEvent | TraceItem]:
        """`traces`, each followed by the deltas it releases."""
        events: list[DeltaEvent | TraceItem] = []
        for trace in traces:
            events.append(trace)
            events.extend(self._order.trace(trace))
        return events
