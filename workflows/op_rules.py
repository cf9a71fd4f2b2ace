"""What happens to a submitted context op, for runs and sessions alike.

Invalid ops are rejected with their reason; an op id already applied is a duplicate
(changing nothing); otherwise the op is applied at once when idle, or deferred while a
run is active (the caller keeps it in the single pending slot: latest wins).
"""

from __future__ import annotations

from contracts import Ack
from conversation import (
    ContextModifyInput,
    ContextOpPayload,
    ConversationState,
    InvalidContextOpError,
    validate_operation,
)


def op_ack(
    conversation: ConversationState, request: ContextModifyInput, *, running: bool
) -> tuple[Ack, ContextOpPayload | None]:
    """What to do with a context op: apply now (idle), defer (running), or nothing (duplicate, invalid)."""
    try:
        op = validate_operation(request, conversation.active_context_ref)
    except InvalidContextOpError as err:
        return Ack(
            status="rejected", op_id=request.op_id or None, reason="invalid_op", message=err.reason
        ), None
    if conversation.is_applied(op.op_id):
        return Ack(status="duplicate", op_id=op.op_id, message="this op_id was already applied"), None
    if running:
        return Ack(status="deferred", op_id=op.op_id, message="applied when the active run ends"), op
    return Ack(status="applied", op_id=op.op_id), op
