"""Payloads of the control surface: steer, inject, cancel (context_modify lives in `conversation`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, StringConstraints

from contracts.bounds import Id, Refs
from contracts.limits import (
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    MAX_SOURCE_CHARS,
)

InputKind = Literal["steer", "inject"]
SteerMode = Literal["queue", "interrupt"]


class SteerInput(BaseModel):
    """User-style input for a running run (`steer` and `inject`).

    `input_id` is normally assigned by the run; a session that forwards input sets it,
    so the id it acknowledged is the one recorded in the thread. `reply_to` is set by a
    session forwarding input to its run: the run signals its `Ack` back to that
    workflow (only when it is the run's parent).

    `mode` (steer only): `queue` waits for the next iteration; `interrupt` also cancels
    the LLM call in flight (its partial output is kept as an `interrupted` assistant
    entry) or ends the tool round in flight: running tools finish unless
    `cancel_tools`, tools not started yet get a `cancelled` result. `inject` is always
    `queue`.
    """

    content: Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)] = ""
    expected_request_id: Id | None = None
    input_id: Id | None = None
    source: Annotated[str, StringConstraints(max_length=MAX_SOURCE_CHARS)] | None = None
    refs: Refs = {}
    reply_to: Id | None = None
    mode: SteerMode = "queue"
    cancel_tools: bool = False


class CancelInput(BaseModel):
    """Payload of `cancel` (a session forwarding it sets `cancel_id` and `reply_to`)."""

    reason: Annotated[str, StringConstraints(max_length=MAX_REASON_CHARS)] | None = None
    cancel_id: Id | None = None
    reply_to: Id | None = None


AckStatus = Literal["queued", "deferred", "applied", "accepted", "duplicate", "rejected"]


class Ack(BaseModel):
    """What an acknowledging Update returns.

    `status` is `queued` (steer/inject, with `input_id`), `deferred` or `applied`
    (context_modify), `accepted` (cancel), `duplicate` (an op id already applied)
    or `rejected`, with `reason` a code of `contracts.errors` (`blank_content`,
    `payload_too_large`, `request_mismatch`, `sealed`, `queue_full`, `invalid_op`,
    `not_running`, `idle`, ...) and `message` a sentence for humans. A queued steer
    says in `mode` what was applied: `interrupt` when a call or tool round was in
    flight and was interrupted, `queue` otherwise. An accepted `approve` names its
    `call_id`.
    """

    status: AckStatus
    input_id: str | None = None
    call_id: str | None = None
    mode: SteerMode | None = None
    op_id: str | None = None
    reason: str | None = None
    message: str | None = None

    @classmethod
    def rejected(cls, reason: str, message: str, *, op_id: str | None = None) -> Ack:
        """A rejection: `reason` a code of `contracts.errors`, `message` a sentence for humans."""
        return cls(status="rejected", op_id=op_id, reason=reason, message=message)


class ControlAck(BaseModel):
    """A run's answer to input or a cancel its parent session forwarded (signal `control_ack`)."""

    id: str
    ack: Ack
