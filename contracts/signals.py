"""Payloads of the control surface: steer, inject, cancel (context_modify lives in `conversation`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

MAX_QUEUED_INPUTS = 64


class SteerInput(BaseModel):
    """User-style input for a running run (`steer` and `inject`).

    `input_id` is normally assigned by the run; a session that forwards input sets it,
    so the id it acknowledged is the one recorded in the thread.
    """

    content: str = ""
    expected_request_id: str | None = None
    input_id: str | None = None
    source: str | None = None
    refs: dict[str, str] = {}


class CancelInput(BaseModel):
    """Payload of `cancel`."""

    reason: str | None = None


class Ack(BaseModel):
    """What an acknowledging Update returns.

    `status` is `queued` (steer/inject, with `input_id`), `deferred` or `applied`
    (context_modify), `accepted` (cancel), `duplicate` (an op id already applied)
    or `rejected`, with `reason` a stable code (`blank_content`, `too_long`,
    `request_mismatch`, `sealed`, `queue_full`, `invalid_op`, `not_running`, ...)
    and `message` a sentence for humans.
    """

    status: Literal["queued", "deferred", "applied", "accepted", "duplicate", "rejected"]
    input_id: str | None = None
    op_id: str | None = None
    reason: str | None = None
    message: str | None = None
