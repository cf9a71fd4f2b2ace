"""How the typed client reports a refused request: `RejectedError`, with a code of `contracts.errors`.

A request can be refused in three places, and the caller sees the same code wherever
it happened: by the client itself, before anything is sent (the payload models'
limits, blank content, an invalid context op); by a workflow's Update validator
(`invalid_input`, `payload_too_large`: the Update leaves no trace in history); or by
the workflow's handler, for decisions that depend on its state (`busy`,
`unknown_request`, `snapshot_expired`, ...). Acknowledging controls (steer, inject,
cancel, context ops, compact, config controls) return these as
`Ack(status="rejected", reason=<code>)`; every other call raises `RejectedError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from pydantic import ValidationError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts import Ack
from contracts.decoding import problem_of
from contracts.errors import NOT_RUNNING


class RejectedError(Exception):
    """A request that the client or the workflow refused; nothing changed.

    Attributes:
        code: a code of `contracts.errors` (or a `snapshot_*` code of a bad snapshot token).
        message: what was wrong, as a sentence (names the field and the limit for size problems).
    """

    def __init__(self, code: str, message: str, details: Mapping[str, object] | None = None) -> None:
        """Create the rejection (`details`: what the workflow added, e.g. the request a `busy` names)."""
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details: Mapping[str, object] = details or {}

    def ack(self, op_id: str | None = None) -> Ack:
        """The rejection as an acknowledging control's answer."""
        return Ack.rejected(self.code, self.message, op_id=op_id)


def invalid_payload(error: ValidationError, what: str) -> RejectedError:
    """The rejection a payload model's validation error stands for, named as the workflow names it.

    Size problems come first and are `payload_too_large`; anything else is `invalid_input`.
    """
    problem = problem_of(error, what)
    return RejectedError(problem.code, problem.message)


def workflow_rejection(error: BaseException) -> RejectedError | None:
    """The rejection a Temporal error stands for, or None when it is not one.

    A coded `ApplicationError` (of an Update, raised by its validator or its handler, or
    the failure of a workflow that refused its input) is a rejection with that code; an
    Update to a workflow that has already finished is `not_running`.
    """
    cause = error.cause if isinstance(error, WorkflowUpdateFailedError) else error
    if isinstance(cause, ApplicationError):
        if not cause.type:
            return None
        first: object = cause.details[0] if cause.details else None
        details = cast(dict[str, object], first) if isinstance(first, dict) else None
        return RejectedError(cause.type, cause.message, details)
    if isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND and finished(error):
        return RejectedError(NOT_RUNNING, "the workflow has already finished")
    return None


def finished(error: RPCError) -> bool:
    """Whether a NOT_FOUND error says the workflow exists but has finished (not that it is unknown)."""
    text = error.message.lower()
    # "aborted by closing workflow": the Update was admitted, then the workflow ended first.
    return any(
        sign in text for sign in ("already completed", "already finished", "aborted by closing workflow")
    )
