"""The per-run trace: an ordered event log, bounded in events and bytes, that a flood cannot silence.

Lifecycle events are always recorded: the first half of the cap is kept from the
start, the second half keeps the newest events (older middle ones are dropped and
counted), so the terminal `request_*` event is always there. Rejections
(`input_rejected`, `context_op_rejected`) are counted per kind; only the first
`REJECTION_SAMPLES` of each are recorded. Event data carries previews of at most
`PREVIEW_CHARS` characters, never whole payloads.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime

from pydantic import JsonValue

from contracts import Trace, TraceEvent, TraceKind

TRACE_CAP = 2_000
REJECTION_SAMPLES = 20
PREVIEW_CHARS = 200
_REJECTIONS: frozenset[TraceKind] = frozenset({"input_rejected", "context_op_rejected"})


def preview(text: str) -> str:
    """At most `PREVIEW_CHARS` characters of `text` (marked when cut)."""
    return text if len(text) <= PREVIEW_CHARS else f"{text[:PREVIEW_CHARS]}…"


class TraceLog:
    """At most `cap` events: the first `cap // 2`, then a ring of the newest."""

    def __init__(self, request_id: str, run_id: str, cap: int = TRACE_CAP) -> None:
        """Create an empty trace for one run."""
        self._request_id = request_id
        self._run_id = run_id
        self._head_cap = cap // 2
        self._head: list[TraceEvent] = []
        self._tail: deque[TraceEvent] = deque(maxlen=cap - cap // 2)
        self._dropped = 0
        self._rejections: dict[str, int] = {}
        self._seq = 0

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
    ) -> TraceEvent | None:
        """Record an event (seq is 1-based and increasing); rejections past the samples are only counted.

        Returns:
            The recorded event, or None when it was only counted.
        """
        if kind in _REJECTIONS:
            seen = self._rejections.get(kind, 0)
            self._rejections[kind] = seen + 1
            if seen >= REJECTION_SAMPLES:
                return None
        self._seq += 1
        event = TraceEvent(
            seq=self._seq,
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
        if len(self._head) < self._head_cap:
            self._head.append(event)
            return event
        if len(self._tail) == self._tail.maxlen:
            self._dropped += 1
        self._tail.append(event)
        return event

    def snapshot(self) -> Trace:
        """The trace as the `trace` query returns it."""
        return Trace(
            events=[*self._head, *self._tail],
            truncated=self._dropped > 0,
            dropped=self._dropped,
            rejections=dict(self._rejections),
        )
