"""Context operations as callers submit them, and their validation.

A `context_modify` request arrives as loosely typed input so that a bad request
can be rejected with a clear reason that is recorded (the reference silently
ignored invalid ops; we report them) instead of being dropped by the SDK's
payload decoding.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, JsonValue, StringConstraints

from conversation.bounds import MAX_CONTEXT_BYTES, MAX_META_BYTES, Id, json_size_at_most
from conversation.messages import Context
from conversation.thread import (
    OPERATION_REASONS,
    OPERATION_TYPES,
    ContextOperation,
    ContextOpPayload,
)


class OperationInput(BaseModel):
    """The `operation` object of a context_modify request, before validation."""

    type: Annotated[str, StringConstraints(max_length=64)] = ""
    reason: Annotated[str, StringConstraints(max_length=64)] = "manual"
    result_context: Annotated[Context, json_size_at_most(MAX_CONTEXT_BYTES, "result_context")] | None = None
    base_seq: int | None = None
    meta: Annotated[dict[str, JsonValue], json_size_at_most(MAX_META_BYTES, "meta")] = {}


class ContextModifyInput(BaseModel):
    """Payload of the `context_modify` signal/update."""

    op_id: Id = ""
    context_ref: Id | None = None
    operation: OperationInput = OperationInput()


class InvalidContextOpError(ValueError):
    """A context operation that cannot be applied; `reason` says why."""

    def __init__(self, reason: str) -> None:
        """Create the error with a human-readable reason."""
        super().__init__(reason)
        self.reason = reason


def validate_operation(request: ContextModifyInput, active_context_ref: str) -> ContextOpPayload:
    """Check a request and return the op as it will be recorded in the thread.

    `context_ref` defaults to the active lane for `replace`; a `switch` must name
    its target lane.

    Raises:
        InvalidContextOpError: with the reason the op was rejected.
    """
    op = request.operation
    if not request.op_id.strip():
        raise InvalidContextOpError("op_id is required")
    if op.type not in OPERATION_TYPES:
        raise InvalidContextOpError(
            f"unknown operation type {op.type!r} (expected one of {', '.join(OPERATION_TYPES)})"
        )
    if op.reason not in OPERATION_REASONS:
        raise InvalidContextOpError(
            f"unknown operation reason {op.reason!r} (expected one of {', '.join(OPERATION_REASONS)})"
        )
    if request.context_ref is not None and not request.context_ref.strip():
        raise InvalidContextOpError("context_ref must not be blank")
    if op.type == "replace" and op.result_context is None:
        raise InvalidContextOpError("a replace operation needs result_context")
    if op.type == "switch" and request.context_ref is None:
        raise InvalidContextOpError("a switch operation needs context_ref (the lane to switch to)")
    if op.type == "switch" and op.result_context is not None:
        raise InvalidContextOpError("a switch operation takes no result_context (use replace)")
    operation = ContextOperation.model_validate(
        {
            "type": op.type,
            "reason": op.reason,
            "result_context": op.result_context,
            "base_seq": op.base_seq,
            "meta": op.meta,
        }
    )
    return ContextOpPayload(
        op_id=request.op_id,
        context_ref=request.context_ref if request.context_ref is not None else active_context_ref,
        operation=operation,
    )
