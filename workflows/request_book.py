"""The session's request book: every ask, the one that is running, and the one about to start.

Asks are deduplicated by `request_id` (across continue-as-new: the records are
carried). The book keeps the last `MAX_KEPT_REQUESTS` records; each is small (a query
preview and an `Outcome`), because the query and the answer live in the thread once.
"""

from __future__ import annotations

from datetime import datetime

from contracts import Outcome, RunInput
from contracts.session import MAX_KEPT_REQUESTS, QUERY_PREVIEW_CHARS, RequestRecord


class RequestBook:
    """Records of the session's requests, and which one is active."""

    def __init__(self, records: list[RequestRecord], runs_started: int) -> None:
        """Continue from carried records."""
        self.records = records
        self.runs_started = runs_started
        self.active: RequestRecord | None = None
        self.next: RunInput | None = None
        self.child_started = False

    def find(self, request_id: str) -> RequestRecord | None:
        """The kept record of a request, if any."""
        return next((r for r in self.records if r.request_id == request_id), None)

    def open(self, run: RunInput, session_id: str, now: datetime) -> RequestRecord:
        """Record a new request (it becomes active and its run is the next to start)."""
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
        self.active, self.next, self.child_started = record, run, False
        return record

    def close(self, record: RequestRecord, outcome: Outcome, now: datetime) -> None:
        """Record how the request ended; nothing is active any more."""
        record.outcome = outcome
        record.finished_at = now
        if self.active is record:
            self.active, self.child_started = None, False
