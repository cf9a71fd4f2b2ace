"""The per-run trace: an ordered event log, capped so a chatty run cannot grow without bound."""

from __future__ import annotations

from datetime import datetime

from pydantic import JsonValue

from contracts import Trace, TraceEvent, TraceKind

TRACE_CAP = 2_000


class TraceLog:
    """Stores at most `cap` events; after that sets `truncated` and stores no more."""

    def __init__(self, request_id: str, run_id: str, cap: int = TRACE_CAP) -> None:
        """Create an empty trace for one run."""
        self._request_id = request_id
        self._run_id = run_id
        self._cap = cap
        self._trace = Trace()

    def add(
        self,
        kind: TraceKind,
        at: datetime,
        iteration: int,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, JsonValue] | None = None,
    ) -> None:
        """Record an event (seq is 1-based and strictly increasing), unless the cap is reached."""
        if len(self._trace.events) >= self._cap:
            self._trace.truncated = True
            return
        self._trace.events.append(
            TraceEvent(
                seq=len(self._trace.events) + 1,
                at=at,
                kind=kind,
                iteration=iteration,
                request_id=self._request_id,
                run_id=self._run_id,
                call_id=call_id,
                input_id=input_id,
                op_id=op_id,
                data=data or {},
            )
        )

    def snapshot(self) -> Trace:
        """The trace as the `trace` query returns it."""
        return self._trace
