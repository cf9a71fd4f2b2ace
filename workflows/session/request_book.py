"""The session's request book: every ask, the one that is running, and the ones waiting for it.

Asks are deduplicated by `request_id` (across continue-as-new: the records are
carried). The book keeps the last `MAX_KEPT_REQUESTS` records; each is small (a query
preview and an `Outcome`), because the query and the answer live in the thread once.

An ask that waits (`enqueue`, or the replacement of an `interrupt`/`rollback`) is
recorded at once and waits in `waiting`, at most `MAX_QUEUED_ASKS`. When the active
request closes, the first waiting one becomes active in the same step, so nothing is
active only when nothing waits (the session continues as new only then).
Replacements wait ahead of enqueued asks, in the order they came.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts import Outcome, RunInput
from contracts.session import MAX_KEPT_REQUESTS, QUERY_PREVIEW_CHARS, RequestRecord
from contracts.workflow_ids import MAX_WORKFLOW_ID_BYTES, bounded_id


@dataclass
class Waiting:
    """A recorded request whose run starts after the active one."""

    record: RequestRecord
    run: RunInput
    replacement: bool


class RequestBook:
    """Records of the session's requests, which one is active, and which wait for it (the only writer)."""

    def __init__(self, records: list[RequestRecord], runs_started: int) -> None:
        """Continue from carried records."""
        self._records = records
        self._runs_started = runs_started
        self._active: RequestRecord | None = None
        self._next: RunInput | None = None
        self._waiting: list[Waiting] = []
        self._roll_back: set[str] = set()
        """Requests whose lane is put back when they end `cancelled` (`on_busy: rollback`)."""

    @property
    def records(self) -> list[RequestRecord]:
        """The kept records, oldest first (a copy)."""
        return list(self._records)

    @property
    def runs_started(self) -> int:
        """How many requests this session (and the sessions it continues) recorded."""
        return self._runs_started

    @property
    def active(self) -> RequestRecord | None:
        """The request whose run is running or about to start."""
        return self._active

    @property
    def next(self) -> RunInput | None:
        """The active request's run input until its run is taken to start (`take_next`)."""
        return self._next

    @property
    def waiting_count(self) -> int:
        """How many recorded requests wait for the active one."""
        return len(self._waiting)

    @property
    def idle(self) -> bool:
        """Nothing active, nothing waiting, nothing to start."""
        return self._next is None and self._active is None and not self._waiting

    def find(self, request_id: str) -> RequestRecord | None:
        """The kept record of a request, if any."""
        return next((r for r in self._records if r.request_id == request_id), None)

    @property
    def last_request_id(self) -> str | None:
        """The most recently recorded request (active, waiting or finished), if any."""
        return self._records[-1].request_id if self._records else None

    def open(
        self, run: RunInput, session_id: str, now: datetime, webhook_url: str | None = None
    ) -> RequestRecord:
        """Record a new request (it becomes active and its run is the next to start)."""
        record = self._record(run, session_id, now, webhook_url)
        self._active, self._next = record, run
        return record

    def take_next(self) -> RunInput | None:
        """The run input of the active request, to start now (it is no longer `next`)."""
        taken, self._next = self._next, None
        return taken

    def mark_roll_back(self, request_id: str) -> None:
        """Put the request's lane back if it ends `cancelled` (`on_busy: rollback`)."""
        self._roll_back.add(request_id)

    def take_roll_back(self, request_id: str) -> bool:
        """Whether the request was marked to be rolled back (the mark is removed)."""
        marked = request_id in self._roll_back
        self._roll_back.discard(request_id)
        return marked

    def wait(
        self,
        run: RunInput,
        session_id: str,
        now: datetime,
        *,
        replacement: bool,
        webhook_url: str | None = None,
    ) -> tuple[RequestRecord, int]:
        """Record a request that runs after the active one; its record and position (1: next)."""
        record = self._record(run, session_id, now, webhook_url)
        position = len(self._waiting)
        if replacement:  # after the replacements already waiting, ahead of every enqueued ask
            position = next((i for i, w in enumerate(self._waiting) if not w.replacement), position)
        self._waiting.insert(position, Waiting(record, run, replacement))
        return record, position + 1

    def close(self, record: RequestRecord, outcome: Outcome, now: datetime) -> None:
        """Record how the request ended; the first waiting request (if any) becomes active."""
        record.outcome = outcome
        record.finished_at = now
        if self._active is record:
            self._active = None
            if self._waiting:
                first = self._waiting.pop(0)
                first.record.started_at = now
                self._active, self._next = first.record, first.run

    def _record(
        self, run: RunInput, session_id: str, now: datetime, webhook_url: str | None
    ) -> RequestRecord:
        assert run.request_id is not None
        self._runs_started += 1
        record = RequestRecord(
            request_id=run.request_id,
            run_workflow_id=bounded_id(
                session_id, f"-run-{self._runs_started}", max_chars=MAX_WORKFLOW_ID_BYTES
            ),
            query_preview=run.query[:QUERY_PREVIEW_CHARS],
            started_at=now,
            refs=run.query_refs,
            webhook_url=webhook_url,
            agent_version=run.agent_version,
        )
        self._records.append(record)
        del self._records[:-MAX_KEPT_REQUESTS]
        return record
