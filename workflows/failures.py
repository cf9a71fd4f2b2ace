"""Turning a failed activity or child workflow into the `RunError` a result or record carries."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, TimeoutError

from contracts import RunError
from contracts.errors import ACTIVITY_ERROR, CHILD_FAILED, TIMEOUT


def run_error(err: BaseException) -> RunError:
    """The `RunError` for `err`: the cause's code and message when it has one (`contracts.errors`)."""
    cause = err.cause if isinstance(err, ActivityError | ChildWorkflowError) else err
    fallback = CHILD_FAILED if isinstance(err, ChildWorkflowError) else ACTIVITY_ERROR
    if isinstance(cause, ApplicationError):
        return RunError(type=cause.type or fallback, message=cause.message)
    if isinstance(cause, TimeoutError):
        return RunError(type=TIMEOUT, message=f"timed out ({cause.message})")
    return RunError(type=fallback, message=str(cause or err))
