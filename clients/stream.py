"""Following live streams: a run's events, a session's across its runs, and the text the deltas build.

A run hosts a Workflow Stream (`temporalio.contrib.workflow_streams`) whose one topic
carries `contracts.stream.StreamEvent`s: `TraceItem`s always, `DeltaEvent`s when its
config streams. `run_events` subscribes to it and ends when the run has ended (a
subscriber of a closed run drains what it kept by query). It long-polls by Update
until the run refuses that (`poll_budget_spent`: the run answers a bounded number of
poll Updates, so steer, approve and cancel by Update always have room), then polls
by query, which adds no history. The run drops what its
thread already holds from the stream's log, so a subscriber that arrives late (or
falls behind) would miss trace events: they are read back from the `trace` query,
so every trace event is yielded once, in trace order.

`session_events` follows a session: it finds the active or next request through the
session's `status` and `requests` queries (queries add no history, and reach the
session's newest run, so they follow its continues-as-new), follows that request's run
to its end, then waits for the next one. `TextAssembler` folds deltas into the text of
each LLM call, dropping those of an attempt a retry superseded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from pydantic import TypeAdapter, ValidationError
from temporalio.client import Client, RPCTimeoutOrCancelledError, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from clients.live_follow import channel_events, client_channel
from clients.stream_polls import query_polls, update_polls
from contracts import Trace, TraceEvent
from contracts.call_texts import CallText, CallTexts
from contracts.errors import POLL_BUDGET_SPENT
from contracts.run import CALL_END_KINDS, TERMINAL_KINDS
from contracts.session import RequestRecord, SessionStatus
from contracts.stream import DeltaEvent, StreamEvent, TraceItem

STREAM_EVENTS: TypeAdapter[DeltaEvent | TraceItem] = TypeAdapter(StreamEvent)
DEFAULT_POLL_COOLDOWN_S = 0.1
"""Least time between two stream polls once caught up (each poll is an Update in the run's history)."""
MAX_POLL_RETRIES = 10
"""Polls in a row that failed, and may be made again, before giving up (`RETRIED_POLL_STATUSES`)."""
RETRIED_POLL_STATUSES = frozenset(
    {RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED}
)
"""A poll refused because a workflow task failed, or one the server did not answer in time (a
loaded worker replaying the run): polls only read, so each is made again from the same offset."""
DEFAULT_SESSION_POLL_S = 0.5
"""How often a session follower asks the session for its next request while none runs."""
RUN_BOUNDARY_KINDS = TERMINAL_KINDS | {"request_started"}

TraceReader = Callable[[], Awaitable[Trace]]


@dataclass(frozen=True)
class SessionEvent:
    """One event of a session's stream: the request and the run it belongs to, and the event."""

    request_id: str
    run_workflow_id: str
    event: DeltaEvent | TraceItem


class _TraceGaps:
    """Yields each trace event once, in seq order, filling gaps the stream's truncation left from `read`."""

    def __init__(self, read: TraceReader) -> None:
        self._read = read
        self.last_seq = 0
        self.ended = False

    async def before(self, item: TraceItem | None) -> list[TraceItem]:
        """The missed trace events before `item` (None: the stream's end), empty when nothing is missed."""
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
        self.last_seq = item.event.seq
        self.ended = self.ended or item.event.kind in TERMINAL_KINDS
        return item


async def run_events(
    client: Client,
    workflow_id: str,
    read_trace: TraceReader,
    *,
    poll_cooldown_s: float = DEFAULT_POLL_COOLDOWN_S,
) -> AsyncIterator[DeltaEvent | TraceItem]:
    """The events of run `workflow_id`, in order, until the run has ended (see the module docstring).

    Items that do not decode as a `StreamEvent` (a newer worker's kinds) are skipped. A poll
    refused because a workflow task of the run failed (`FAILED_PRECONDITION`, e.g. a late
    signal arriving as the run completes), or not answered in time (a loaded worker), is made
    again from the same offset, up to `MAX_POLL_RETRIES` times in a row.

    With a live channel (`REACT_LIVE_URL`, or the dev server's: `live.dev_channel`), the run is followed there
    (`clients.live_follow`: no poll, no history), on its stream if its worker writes to none.

    Raises:
        RPCError: e.g. `NOT_FOUND` when no run has this workflow id.
    """
    gaps = _TraceGaps(read_trace)
    channel = client_channel(client)
    if channel is None:
        events = _polled_events(client, workflow_id, gaps, poll_cooldown_s)
    else:

        def fallback() -> AsyncIterator[DeltaEvent | TraceItem]:
            return _polled_events(client, workflow_id, gaps, poll_cooldown_s)

        events = channel_events(client, workflow_id, channel, gaps, fallback)
    async for event in events:
        yield event


async def _polled_events(
    client: Client, workflow_id: str, gaps: _TraceGaps, poll_cooldown_s: float
) -> AsyncIterator[DeltaEvent | TraceItem]:
    """The run's events from its Workflow Stream: polls by Update, then by query."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    cooldown = timedelta(seconds=poll_cooldown_s)
    offset, retries, by_query = 0, 0, False
    while True:
        items = (
            query_polls(client, workflow_id, offset, lambda: gaps.ended, poll_cooldown_s)
            if by_query
            else update_polls(stream, offset, cooldown)
        )
        try:
            async for item_offset, data in items:
                offset, retries = item_offset + 1, 0
                try:
                    event = STREAM_EVENTS.validate_json(data)
                except ValidationError:
                    continue
                if isinstance(event, DeltaEvent):
                    yield event
                    continue
                for missed in await gaps.before(event):
                    yield missed
                if event.event.seq > gaps.last_seq:
                    yield gaps.seen(event)
            break
        except WorkflowUpdateFailedError as error:
            if getattr(error.cause, "type", None) != POLL_BUDGET_SPENT:
                raise
            by_query = True  # the run keeps its Updates for controls: poll by query (no history)
        except (RPCError, RPCTimeoutOrCancelledError) as error:
            # A workflow task that failed (e.g. a late signal as the run completes) aborts the
            # Updates in flight, the library's poll among them; a worker replaying the run on a
            # loaded machine may answer a poll (or the trace read) too late: poll again from there.
            retries += 1
            again = isinstance(error, RPCTimeoutOrCancelledError) or error.status in RETRIED_POLL_STATUSES
            if not again or retries > MAX_POLL_RETRIES:
                raise
            await asyncio.sleep(poll_cooldown_s * retries)
    for missed in await gaps.before(None):
        yield missed


def trace_reader(client: Client, workflow_id: str) -> TraceReader:
    """Reads the `trace` query of run `workflow_id`."""
    handle = client.get_workflow_handle(workflow_id)

    async def read() -> Trace:
        return await handle.query("trace", result_type=Trace)

    return read


class SessionReader(Protocol):
    """What following a session reads of it (`clients.session_handle.SessionHandle` is one)."""

    async def status(self) -> SessionStatus:
        """The session's status."""
        ...

    async def requests(self) -> list[RequestRecord]:
        """The session's kept request records, oldest first."""
        ...


async def _start_point(session: SessionReader, from_request: str | None) -> set[str]:
    """Requests not to follow: those before `from_request`, else before the active one, else all so far."""
    records = await session.requests()
    first = from_request or (await session.status()).active_request_id
    ids = [r.request_id for r in records]
    return set(ids[: ids.index(first)] if first in ids else ids)


async def session_events(
    client: Client,
    session: SessionReader,
    *,
    from_request: str | None = None,
    poll_interval_s: float = DEFAULT_SESSION_POLL_S,
    poll_cooldown_s: float = DEFAULT_POLL_COOLDOWN_S,
) -> AsyncIterator[SessionEvent]:
    """The events of the session's requests, one run after the other, from now on (it never ends: break).

    It starts with `from_request` (one of the kept requests), else with the active
    request, else with the next one asked. Requests run one at a time, in the order
    of their records; a request that ended without a run (cancelled while queued)
    yields nothing.
    """
    done = await _start_point(session, from_request)
    while True:
        records = await session.requests()
        done &= {r.request_id for r in records}  # bounded by what the session keeps
        record = next((r for r in records if r.request_id not in done), None)
        if record is None:
            await asyncio.sleep(poll_interval_s)
            continue
        try:
            async for event in run_events(
                client,
                record.run_workflow_id,
                trace_reader(client, record.run_workflow_id),
                poll_cooldown_s=poll_cooldown_s,
            ):
                yield SessionEvent(record.request_id, record.run_workflow_id, event)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            if record.status == "running":  # queued, or its run is about to start
                await asyncio.sleep(poll_interval_s)
                continue
        done.add(record.request_id)


class TextAssembler:
    """Folds a run's deltas into the text of its LLM calls, keeping the newest attempt of each call.

    The deltas are folded by `contracts.call_texts.CallTexts` (the newest attempt of a call
    wins); an `llm_completed` or `llm_interrupted` trace event (the call's message is in the
    thread) and a run's start or end clear what was assembled; later deltas of a call that has
    ended are dropped (until the next run).
    """

    def __init__(self) -> None:
        """Start empty."""
        self._texts = CallTexts()
        self._ended = -1  # the highest call index known to have ended

    @property
    def calls(self) -> dict[int, CallText]:
        """The calls being assembled, by index."""
        return self._texts.calls

    @property
    def current(self) -> CallText | None:
        """The newest call being assembled (None between calls)."""
        return self.calls[max(self.calls)] if self.calls else None

    @property
    def text(self) -> str:
        """The text of the newest call being assembled ("" between calls)."""
        current = self.current
        return current.text if current is not None else ""

    def add(self, event: DeltaEvent | TraceItem) -> bool:
        """Fold in one event; True when what is assembled changed."""
        if isinstance(event, TraceItem):
            return self._trace(event.event)
        return event.call > self._ended and self._texts.add(event) != "stale"

    def _trace(self, event: TraceEvent) -> bool:
        if event.kind in CALL_END_KINDS:
            call = event.data.get("call")
            self._ended = max(self._ended, call if isinstance(call, int) else max(self.calls, default=-1))
        elif event.kind in RUN_BOUNDARY_KINDS:  # a session's next run counts its calls from 0 again
            self._ended = -1
        else:
            return False
        changed = bool(self.calls)
        self._texts.clear()
        return changed
