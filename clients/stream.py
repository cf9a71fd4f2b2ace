"""Following live streams: a run's events, a session's across its runs, and the text the deltas build.

`run_events` follows one run until it has ended: on the live channel where the deployment has
one (`clients.channel_entries`), else, or when the channel has nothing of the run, on the run's
Workflow Stream (`temporalio.contrib.workflow_streams`, `clients.stream_polls`: long polls by
Update until the run refuses that, `poll_budget_spent`, so steer, approve and cancel by Update
always have room; then polls by query, which adds no history). One follower reads either
(`clients.run_follow.RunFollower`): each event once, in trace order, with what a source missed
read back from the run's `trace` query.

`session_events` follows a session: it finds the active or next request through the
session's `status` and `requests` queries (queries add no history, and reach the
session's newest run, so they follow its continues-as-new), follows that request's run
to its end, then waits for the next one. `TextAssembler` folds deltas into the text of
each LLM call, dropping those of an attempt a retry superseded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from clients.channel_entries import ChannelEntries, client_channel
from clients.run_follow import EntrySource, RunFollower, TraceReader
from clients.stream_polls import DEFAULT_POLL_COOLDOWN_S, StreamEntries, read_again
from contracts import Trace, TraceEvent
from contracts.call_texts import CallText, CallTexts
from contracts.run import CALL_END_KINDS, TERMINAL_KINDS
from contracts.session import RequestRecord, SessionStatus
from contracts.stream import DeltaEvent, TraceItem

DEFAULT_SESSION_POLL_S = 0.5
"""How often a session follower asks the session for its next request while none runs."""
RUN_BOUNDARY_KINDS = TERMINAL_KINDS | {"request_started"}


@dataclass(frozen=True)
class SessionEvent:
    """One event of a session's stream: the request and the run it belongs to, and the event."""

    request_id: str
    run_workflow_id: str
    event: DeltaEvent | TraceItem


async def run_events(
    client: Client,
    workflow_id: str,
    read_trace: TraceReader,
    *,
    poll_cooldown_s: float = DEFAULT_POLL_COOLDOWN_S,
) -> AsyncIterator[DeltaEvent | TraceItem]:
    """The events of run `workflow_id`, in order, until the run has ended (`clients.run_follow`).

    With a live channel (`REACT_LIVE_URL`, or the dev server's: `live.dev_channel`), the run is
    followed there (`clients.channel_entries`: no poll, no history), then on its Workflow Stream
    (`clients.stream_polls`) if its worker writes to none or the channel fails. A read of the
    run's trace that the server did not answer in time is made again (`read_again`).

    Raises:
        RPCError: e.g. `NOT_FOUND` when no run has this workflow id.
    """
    stream = StreamEntries(client, workflow_id, poll_cooldown_s)
    channel = client_channel(client)
    sources: list[EntrySource] = (
        [stream] if channel is None else [ChannelEntries(client, workflow_id, channel), stream]
    )
    follower = RunFollower(workflow_id, read_again(read_trace, poll_cooldown_s))
    async for event in follower.events(sources):
        yield event


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
