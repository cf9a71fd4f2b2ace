"""The reads a run's feed makes for its trace events: the thread messages and state each brings.

With each trace event that adds messages to the run's thread (an LLM call's answer, a tool's
result, the run's end), the feed reads those messages once (a query: no history) and hands them
to every viewer (`HubItem.entries`); after a `STATE_KINDS` event it reads the run's state. At the
run's end both come from the run's result instead (`TERMINAL_KINDS`: read from the server, so the
worker does not replay the closed run to answer two queries), and from the queries only when the
result cannot be read. The reads run in their own task, one at a time in event order, while the
feed goes on polling the stream: the event goes out at once and `HubItem.enriched()` waits for its
reads. A viewer that needs only the events (A2A, MCP) is never held back by a query, and the
feed's next poll is not either (a query to a busy worker can take tens of milliseconds; one to a
run that has just ended replays its whole history).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from temporalio.service import RPCError, RPCStatusCode

from clients.runs import RunHandle
from contracts import RunResult, RunState, TraceEvent
from contracts.run import CALL_END_KINDS, TERMINAL_KINDS
from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry

__all__ = ["ENTRY_KINDS", "STATE_KINDS", "EventReads", "HubItem"]

T = TypeVar("T")
log = logging.getLogger(__name__)

ENTRY_KINDS = CALL_END_KINDS | TERMINAL_KINDS | {"tool_completed", "input_injected"}
"""Trace events after which the run's thread may hold new messages."""
QUERY_ATTEMPTS = 3
RESULT_WAIT_S = 10.0
"""How long the feed waits at the run's end trace event for the run to close (then it queries)."""
STATE_KINDS = TERMINAL_KINDS | {"state_effects_applied"}
"""Trace events after which the feed reads the run's state once (agent state, outcome and usage)."""


@dataclass(frozen=True)
class HubItem:
    """One event of a run, with the thread messages the run gained by it (for trace events above)."""

    event: DeltaEvent | TraceItem
    entries: tuple[MessageEntry, ...] = ()
    state: RunState | None = None
    """The run's state after a `STATE_KINDS` trace event (its agent state, outcome and usage)."""
    reads: asyncio.Future[HubItem] | None = field(default=None, compare=False, repr=False)
    """The feed's reads for this event while they run: the same item with `entries` and `state`."""

    async def enriched(self) -> HubItem:
        """This item with the messages and state the feed reads for it (waits for those reads)."""
        if self.reads is None:
            return self
        return await asyncio.shield(self.reads)  # one viewer leaving cancels nobody else's wait


_Job = tuple[TraceItem, "asyncio.Future[HubItem]"]


class EventReads:
    """The reads of one run's feed, made by one task in event order (`item` queues them)."""

    def __init__(self, run: RunHandle) -> None:
        """Reads of `run` (its thread pages and state queries)."""
        self._run = run
        self._thread = _RunThread(run)
        self._jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        self.task = asyncio.create_task(self._work())

    def item(self, event: DeltaEvent | TraceItem) -> HubItem:
        """The hub item of `event`, its reads queued when it needs any."""
        if (
            isinstance(event, DeltaEvent)
            or (event.event.kind not in ENTRY_KINDS and event.event.kind not in STATE_KINDS)
            or self.task.done()
        ):
            return HubItem(event)
        reads: asyncio.Future[HubItem] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait((event, reads))
        return HubItem(event, reads=reads)

    def finish(self) -> None:
        """No more events: the task ends once the queued reads are made."""
        self._jobs.put_nowait(None)

    def cancel(self) -> None:
        """Stop reading; every queued item is handed out without its reads."""
        self.task.cancel()

    async def _work(self) -> None:
        job: _Job | None = None
        try:
            while (job := await self._jobs.get()) is not None:
                event, reads = job
                entries: tuple[MessageEntry, ...] = ()
                state: RunState | None = None
                try:
                    ended = await self._ended() if event.event.kind in TERMINAL_KINDS else None
                    if ended is not None:
                        entries, state = ended
                    if ended is None and event.event.kind in ENTRY_KINDS:
                        entries = await _patiently(partial(self._thread.entries_for, event.event), ())
                    if ended is None and event.event.kind in STATE_KINDS:
                        state = await _patiently(self._run.state, None)
                except Exception:  # an answer that does not parse: the event goes out bare
                    run_id, kind = self._run.workflow_id, event.event.kind
                    log.warning("reading run %s for %s failed", run_id, kind, exc_info=True)
                finally:  # read or not, no viewer waits forever
                    reads.set_result(HubItem(event, entries, state))
        finally:
            while not self._jobs.empty():
                if (left := self._jobs.get_nowait()) is not None:
                    left[1].set_result(HubItem(left[0]))

    async def _ended(self) -> tuple[tuple[MessageEntry, ...], RunState] | None:
        """The run's last messages and its state from its result; None when it cannot be read."""
        try:
            result = await asyncio.wait_for(self._run.result(), RESULT_WAIT_S)
        except Exception:  # terminated, refused, or slow to close: the queries answer instead
            return None
        state = RunState(
            request_id=result.request_id,
            run_id=result.run_id,
            outcome=result.outcome,
            iteration=result.outcome.iterations,
            agent_state=result.agent_state or {},
        )
        return self._thread.rest_from(result), state


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
        if event.kind in CALL_END_KINDS:
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

    def rest_from(self, result: RunResult) -> tuple[MessageEntry, ...]:
        """Every message not handed out yet, from the run's result (the run has ended)."""
        last = self._known[-1].seq if self._known else -1
        self._known.extend(e for e in result.entries if isinstance(e, MessageEntry) and e.seq > last)
        out = tuple(self._known[self._handed :])
        self._handed = len(self._known)
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
