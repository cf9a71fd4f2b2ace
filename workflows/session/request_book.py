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


@dataclass
class Waiting:
    """A recorded request whose run starts after the active one."""

    record: RequestRecord
    run: RunInput
    replacement: bool


class RequestBook:
    """Records of the session's requests, which one is active, and which wait for it."""

    def __init__(self, records: list[RequestRecord], runs_started: int) -> None:
        """Continue from carried records."""
        self.records = records
        self.runs_started = runs_started
        self.active: RequestRecord | None = None
        self.next: RunInput | None = None
        self.child_started = False
        self.waiting: list[Waiting] = []
        self.roll_back: set[str] = set()
        """Requests whose lane is put back when they end `cancelled` (`on_busy: rollback`)."""

    def find(self, request_id: str) -> RequestRecord | None:
        """The kept record of a request, if any."""
        return next((r for r in self.records if r.request_id == request_id), None)

    @property
    def last_request_id(self) -> str | None:
        """The most recently recorded request (active, waiting or finished), if any."""
        return self.records[-1].request_id if self.records else None

    def open(self, run: RunInput, session_id: str, now: datetime) -> RequestRecord:
        """Record a new request (it becomes active and its run is the next to start)."""
        record = self._record(run, session_id, now)
        self.active, self.next, self.child_started = record, run, False
        return record

    def wait(
        self, run: RunInput, session_id: str, now: datetime, *, replacement: bool
    ) -> tuple[RequestRecord, int]:
        """Record a request that runs after the active one; its record and position (1: next)."""
        record = self._record(run, session_id, now)
        position = len(self.waiting)
        if replacement:  # after the replacements already waiting, ahead of every enqueued ask
            position = next((i for i, w in enumerate(self.waiting) if not w.replacement), position)
        self.waiting.insert(position, Waiting(record, run, replacement))
        return record, position + 1

    def close(self, record: RequestRecord, outcome: Outcome, now: datetime) -> None:
        """Record how the request ended; the first waiting request (if any) becomes active."""
        record.outcome = outcome
        record.finished_at = now
        if self.active is record:
            self.active, self.child_started = None, False
            if self.waiting:
                first = self.waiting.pop(0)
                first.record.started_at = now
                self.active, self.next = first.record, first.run

    def _record(self, run: RunInput, session_id: str, now: datetime) -> RequestRecord:
        assert run.request_id is not None
        self.runs_started += 1
        record = RequestRecord(
            request_id=run.request_id,
            run_workflow_id=f"{session_id}-run-{self.runs_started}",
            query_preview=run.query[:QUERY_PREVIEW_CHARS],
            started_at=now,
        )
        self.records.append(record)
        del self.records[:-MAX_KEPT_REQUESTS]
        return record
