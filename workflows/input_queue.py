"""The run's pending-input queue for `steer` and `inject`.

Queued input is held here only: it reaches the thread when the run drains the
queue at an iteration boundary, and is dropped if the run ends first. Once the
run has decided to complete it seals the queue (in the same workflow task as the
emptiness check, so nothing can slip in between) and later input is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from contracts import MAX_QUERY_CHARS, MAX_QUEUED_INPUTS, SteerInput

InputKind = Literal["steer", "inject"]


@dataclass(frozen=True)
class QueuedInput:
    """One accepted input, waiting to be drained."""

    input_id: str
    kind: InputKind
    content: str
    source: str | None
    refs: dict[str, str]


class InputRejectedError(Exception):
    """Input that was not queued; `reason` is a stable code, `message` a sentence."""

    def __init__(self, reason: str, message: str) -> None:
        """Create the rejection."""
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass
class InputQueue:
    """FIFO of at most `MAX_QUEUED_INPUTS` inputs, sealed when the run completes."""

    items: list[QueuedInput] = field(default_factory=lambda: [])
    sealed: bool = False

    def offer(self, kind: InputKind, payload: SteerInput, request_id: str, input_id: str) -> QueuedInput:
        """Queue input for the run `request_id`, or raise `InputRejectedError` leaving the queue unchanged."""
        if self.sealed:
            raise InputRejectedError("sealed", "the run is no longer accepting input")
        if not payload.content.strip():
            raise InputRejectedError("blank_content", "content must not be blank")
        if len(payload.content) > MAX_QUERY_CHARS:
            raise InputRejectedError("too_long", f"content is longer than {MAX_QUERY_CHARS} characters")
        if payload.expected_request_id is not None and payload.expected_request_id != request_id:
            raise InputRejectedError(
                "request_mismatch",
                f"expected request {payload.expected_request_id!r} but the run serves {request_id!r}",
            )
        if len(self.items) >= MAX_QUEUED_INPUTS:
            raise InputRejectedError("queue_full", f"at most {MAX_QUEUED_INPUTS} inputs may be queued")
        item = QueuedInput(input_id, kind, payload.content, payload.source, dict(payload.refs))
        self.items.append(item)
        return item

    def drain(self) -> list[QueuedInput]:
        """Take every queued input, oldest first."""
        drained, self.items = self.items, []
        return drained

    def seal(self) -> list[QueuedInput]:
        """Stop accepting input; return (and forget) whatever was still queued."""
        self.sealed = True
        return self.drain()
