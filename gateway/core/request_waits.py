"""The request core's waits: for a queued request's start, for a request to pause or end.

`follow` is the one rule of every stream of a request (AG-UI, the AI SDK, A2A, and `wait` under
MCP and the HTTP API): the run's events through the hub (one subscription for every viewer),
each shown by the stream's `RequestView`, until the request pauses (an approval request the
view showed names a call the run still lists: `RequestReads.awaiting`) or ends (what the view
shows of the terminal event is handed on once the session has recorded the end, so every read
after the stream agrees with it). `until_started` asks the session, backing off, while a queued
request waits (the hub follows runs, and a queued request has none yet: following the run ahead
of it instead kept a second feed polling that run, which cost more than it saved on a busy
worker); `recorded` waits (briefly) for the session to record a run's end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from temporalio.service import RPCError

from contracts.approval import PendingApproval
from contracts.run import RunResult
from contracts.session import RequestRecord
from contracts.stream import DeltaEvent
from gateway.context import GatewayContext
from gateway.core.follow import RunEnd, follow_run, is_terminal
from gateway.core.request_reads import RequestReads
from gateway.core.request_state import RequestState
from gateway.core.threads import Thread
from gateway.errors import GatewayError
from gateway.feed.hub import HubItem

__all__ = ["MAX_WAIT_S", "SETTLE_S", "Ended", "Paused", "Report", "RequestView", "RequestWaits"]

SETTLE_S = 5.0
"""How long a read after a run's end waits for its session to record that end."""
SETTLE_POLL_S = (0.01, 0.02, 0.05, 0.1, 0.25)
"""How long it waits between asks, then 0.25 s on: each ask is a query, which adds no history but
replays the session on a worker, so a session slow to record the end is not asked in a tight loop."""
QUEUED_POLL_S = (0.05, 0.1, 0.25, 0.5)
"""The waits between asks of a session whether a queued request has started."""
MAX_WAIT_S = 600.0
Report = Callable[[str], Awaitable[None]]
Shown = TypeVar("Shown")
Shown_co = TypeVar("Shown_co", covariant=True)


class RequestView(Protocol[Shown_co]):
    """What one stream shows of a request's run: AG-UI events, AI SDK chunks, A2A events, text."""

    async def show(self, item: HubItem) -> Sequence[Shown_co]:
        """What the stream shows of `item` (an event of the run, in order, from its start)."""
        ...

    @property
    def asked(self) -> Collection[str]:
        """The calls whose approval request the view has shown and would pause at (none: go on)."""
        ...


@dataclass(frozen=True)
class Paused:
    """The request waits for decisions: every call the run lists as awaiting one."""

    pending: list[PendingApproval]


@dataclass(frozen=True)
class Ended:
    """The request's run has ended (`end`); `record` is its record once the session has recorded that.

    `record.status` is still `running` when the session did not record the end within `SETTLE_S`.
    """

    end: RunEnd
    record: RequestRecord


class RequestWaits:
    """Waiting for a request's start and end, over the reads and the hub."""

    def __init__(self, ctx: GatewayContext, reads: RequestReads) -> None:
        """The waits of the gateway `ctx`."""
        self._ctx = ctx
        self._reads = reads

    async def until_started(self, thread: Thread, request_id: str) -> None:
        """Wait while a queued request waits for the ones before it (returns at once otherwise).

        The hub has no event for a queued request's start (it follows runs, and this one's run
        does not exist yet), so the session is asked, backing off to `QUEUED_POLL_S[-1]`.
        """
        polls = 0
        while True:
            status = await self._reads.status(thread)
            if status.active_request_id == request_id:
                return
            if (await self._reads.record(thread, request_id)).status != "running":
                return
            await asyncio.sleep(QUEUED_POLL_S[min(polls, len(QUEUED_POLL_S) - 1)])
            polls += 1

    async def recorded(self, thread: Thread, request_id: str) -> RequestRecord:
        """The request's record once its session has recorded its run's end (or after `SETTLE_S`, as it is).

        The run ends first and its session records that a moment later: waiting here makes every
        read after (`state`, the thread's history, `tasks/get`) agree with the end.
        """
        record = await self._reads.record(thread, request_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_S):
                polls = 0
                while record.status == "running":
                    await _pause(polls)
                    polls += 1
                    record = await self._reads.record(thread, request_id)
        return record

    async def settled(self, thread: Thread, request_id: str, result: RunResult | None = None) -> RequestState:
        """The state of a request whose run has ended (`result`), once its session has recorded the end."""
        return await self.state_at(thread, Ended(RunEnd(result), await self.recorded(thread, request_id)))

    async def state_at(self, thread: Thread, ended: Ended) -> RequestState:
        """The state of the request `ended` names (as it stands, if its session has not recorded the end)."""
        if ended.record.status == "running":
            return await self._reads.state(thread, ended.record.request_id, ended.end.result)
        return await self._reads.ended(ended.record, ended.end.result)

    async def follow(
        self,
        thread: Thread,
        request_id: str,
        run_id: str,
        view: RequestView[Shown],
        *,
        queued: bool = False,
    ) -> AsyncIterator[Shown | Paused | Ended]:
        """What `view` shows of the request's run, then `Paused` or `Ended` (see the module docstring).

        `queued`: the request waits behind another; the run is followed once it has started.

        Raises:
            GatewayError: 503 `unavailable`, whether a call still awaits approval could not be read.
            RPCError: the hub could not follow the run (`NOT_FOUND`: there is no such run).
        """
        if queued:
            await self.until_started(thread, request_id)
        held: Sequence[Shown] = ()
        async for item in follow_run(self._ctx, run_id):
            if isinstance(item, RunEnd):
                record = await self.recorded(thread, request_id)
                for shown in held:
                    yield shown
                yield Ended(item, record)
                return
            if is_terminal(item):  # the run's end follows at once: shown once the session has it
                held = await view.show(item)
                continue
            for shown in await view.show(item):
                yield shown
            if view.asked and (pending := await self._reads.awaiting(run_id, view.asked)):
                yield Paused(pending)
                return

    async def wait(
        self,
        thread: Thread,
        request_id: str,
        wait_s: float,
        report: Report | None = None,
        *,
        run_id: str | None = None,
    ) -> RequestState:
        """Wait up to `wait_s` for the request to end or await approval, handing its text to `report`.

        `run_id`: the run of a request just started (its state need not be read first). Returns
        the request's state then (ended ones once their session has recorded the end).
        """
        wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
        queued = False
        if run_id is None or wait_s == 0:
            state = await self._reads.state(thread, request_id)
            if state.status not in ("running", "queued") or wait_s == 0:
                return state
            run_id, queued = state.run_workflow_id, state.status == "queued"
        # The hub lost the run, or whether a call still waits was not read: read where it stands.
        with contextlib.suppress(TimeoutError, RPCError, GatewayError):
            async with asyncio.timeout(wait_s):
                async for step in self.follow(thread, request_id, run_id, _TextView(report), queued=queued):
                    if isinstance(step, Ended):
                        return await self.state_at(thread, step)
        return await self._reads.state(thread, request_id)


class _TextView:
    """`wait`'s view: the text as it is written, handed to a `Report`; it pauses at any approval request."""

    def __init__(self, report: Report | None) -> None:
        self._report = report
        self.asked: tuple[str, ...] = ()

    async def show(self, item: HubItem) -> Sequence[None]:
        event = item.event
        self.asked = ()
        if isinstance(event, DeltaEvent):
            if event.text and self._report is not None:
                await self._report(event.text)
        elif event.event.kind == "approval_requested":
            self.asked = (event.event.call_id or "",)
        return ()


async def _pause(polls: int) -> None:
    """The wait before the next ask of a session that has not moved on yet (`SETTLE_POLL_S`)."""
    await asyncio.sleep(SETTLE_POLL_S[min(polls, len(SETTLE_POLL_S) - 1)])
