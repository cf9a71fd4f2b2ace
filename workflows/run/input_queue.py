"""The run's pending-input queue for `steer` and `inject`.

Queued input is held here only: it reaches the thread when the run drains the
queue at an iteration boundary, and is dropped if the run ends first. Once the
run has decided to complete it seals the queue (in the same workflow task as the
emptiness check, so nothing can slip in between) and later input is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts import MAX_QUEUED_INPUTS, Ack, InputKind, SteerInput
from contracts.errors import QUEUE_FULL, SEALED
from workflows.input_rules import input_rejection


@dataclass(frozen=True)
class QueuedInput:
    """One accepted input, waiting to be drained."""

    input_id: str
    kind: InputKind
    content: str
    source: str | None
    refs: dict[str, str]


@dataclass
class InputQueue:
    """FIFO of at most `MAX_QUEUED_INPUTS` inputs, sealed when the run completes."""

    items: list[QueuedInput] = field(default_factory=lambda: [])
    sealed: bool = False

    def rejection(self, payload: SteerInput, request_id: str) -> Ack | None:
        """Why input for the run `request_id` would be rejected now, or None (read-only)."""
        if self.sealed:
            return Ack.rejected(SEALED, "the run is no longer accepting input")
        problem = input_rejection(payload, request_id)
        if problem is not None:
            return problem
        if len(self.items) >= MAX_QUEUED_INPUTS:
            return Ack.rejected(QUEUE_FULL, f"at most {MAX_QUEUED_INPUTS} inputs may be queued")
        return None

    def offer(self, kind: InputKind, payload: SteerInput, request_id: str, input_id: str) -> Ack:
        """Queue the input (`queued`), or reject it leaving the queue unchanged."""
        problem = self.rejection(payload, request_id)
        if problem is not None:
            return problem
        self.items.append(QueuedInput(input_id, kind, payload.content, payload.source, dict(payload.refs)))
        return Ack(status="queued", input_id=input_id)

    def drain(self) -> list[QueuedInput]:
        """Take every queued input, oldest first."""
        drained, self.items = self.items, []
        return drained

    def seal(self) -> list[QueuedInput]:
        """Stop accepting input; return (and forget) whatever was still queued."""
        self.sealed = True
        return self.drain()
