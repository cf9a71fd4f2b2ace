"""The request core's waits: for a queued request's start, for a request to end or await approval.

`wait` follows the request's own run through the hub (one subscription for every viewer) until
it ends or awaits approval; `until_started` asks the session, backing off, while a queued
request waits (the hub follows runs, and a queued request has none yet: following the run ahead
of it instead kept a second feed polling that run, which cost more than it saved on a busy
worker); `settled` waits (briefly) for the session to record a run's end, so every read after agrees.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from temporalio.service import RPCError

from contracts.run import RunResult
from contracts.session import RequestRecord
from contracts.stream import DeltaEvent
from gateway.context import GatewayContext
from gateway.core.follow import RunEnd, follow_run
from gateway.core.request_reads import RequestReads
from gateway.core.request_state import RequestState
from gateway.core.threads import Thread

__all__ = ["MAX_WAIT_S", "SETTLE_S", "Report", "RequestWaits"]

SETTLE_S = 5.0
"""How long a read after a run's end waits for its session to record that end."""
SETTLE_POLL_S = (0.01, 0.02, 0.05, 0.1, 0.25)
"""How long it waits between asks, then 0.25 s on: each ask is a query, which adds no history but
replays the session on a worker, so a session slow to record the end is not asked in a tight loop."""
QUEUED_POLL_S = (0.05, 0.1, 0.25, 0.5)
"""The waits between asks of a session whether a queued request has started."""
MAX_WAIT_S = 600.0
Report = Callable[[str], Awaitable[None]]


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
        record = await self.recorded(thread, request_id)
        if record.status == "running":
            return await self._reads.state(thread, request_id, result)
        return await self._reads.ended(record, result)

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
        with contextlib.suppress(TimeoutError, RPCError):  # the hub lost the run: read where it stands
            async with asyncio.timeout(wait_s):
                if queued:
                    await self.until_started(thread, request_id)
                async for item in follow_run(self._ctx, run_id):
                    if isinstance(item, RunEnd):
                        return await self.settled(thread, request_id, item.result)
                    event = item.event
                    if isinstance(event, DeltaEvent):
                        if event.text and report is not None:
                            await report(event.text)
                    elif event.event.kind == "approval_requested" and await self._reads.still_awaiting(
                        run_id
                    ):
                        break
        return await self._reads.state(thread, request_id)


async def _pause(polls: int) -> None:
    """The wait before the next ask of a session that has not moved on yet (`SETTLE_POLL_S`)."""
    await asyncio.sleep(SETTLE_POLL_S[min(polls, len(SETTLE_POLL_S) - 1)])
