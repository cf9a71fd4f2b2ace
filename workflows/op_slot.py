"""What happens to a submitted context op, for runs and sessions alike, and the one pending-op slot.

Invalid ops are rejected with their reason; an op id already applied is a duplicate
(changing nothing); otherwise the op is applied at once when idle, or deferred while
a run is active: it waits in the `OpSlot` (latest wins) until the run's terminal
state, and its owner applies it then. A session's `compact` builds its op itself and
goes through the same rule (`settle`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contracts import Ack
from contracts.errors import INVALID_OP
from conversation import (
    ContextModifyInput,
    ContextOpPayload,
    InvalidContextOpError,
    validate_operation,
)


class OpTarget(Protocol):
    """What the rule reads of a conversation (a run's `ConversationState`, a session's `SessionThread`)."""

    @property
    def active_context_ref(self) -> str:
        """The lane an op without a `context_ref` targets."""
        ...

    def is_applied(self, op_id: str) -> bool:
        """Whether an op with this id was already applied."""
        ...


def op_ack(
    conversation: OpTarget, request: ContextModifyInput, *, running: bool
) -> tuple[Ack, ContextOpPayload | None]:
    """What to do with a context op: apply now (idle), defer (running), or nothing (duplicate, invalid)."""
    try:
        op = validate_operation(request, conversation.active_context_ref)
    except InvalidContextOpError as err:
        return Ack.rejected(INVALID_OP, err.reason, op_id=request.op_id or None), None
    return settle(conversation, op, running=running)


def duplicate(conversation: OpTarget, op_id: str) -> Ack | None:
    """The `duplicate` answer when an op with this id was already applied, else None."""
    if conversation.is_applied(op_id):
        return Ack(status="duplicate", op_id=op_id, message="this op_id was already applied")
    return None


def settle(
    conversation: OpTarget, op: ContextOpPayload, *, running: bool
) -> tuple[Ack, ContextOpPayload | None]:
    """What to do with a valid op (a checked request, or a compaction): duplicate, defer or apply."""
    seen = duplicate(conversation, op.op_id)
    if seen is not None:
        return seen, None
    if running:
        return Ack(status="deferred", op_id=op.op_id, message="applied when the active run ends"), op
    return Ack(status="applied", op_id=op.op_id), op


@dataclass
class OpSlot:
    """The single deferred context op (latest wins); its owner applies it after the run's terminal state."""

    pending: ContextOpPayload | None = None

    def defer(self, op: ContextOpPayload) -> ContextOpPayload | None:
        """Keep `op` for the end of the run; return the op it replaces, if any."""
        replaced, self.pending = self.pending, op
        return replaced

    def take(self) -> ContextOpPayload | None:
        """Empty the slot, returning what was in it."""
        taken, self.pending = self.pending, None
        return taken
