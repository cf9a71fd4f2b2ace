"""Failures: the `RunError` a result or record carries, and telling an interrupt from a failure.

`run_error` turns a failed activity or child workflow into its `RunError`; `cut_short`
tells the cancellation an interrupting steer asked for from a failure or from the run's
own cancellation.
"""

from __future__ import annotations

import asyncio

from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError,
)

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


def cut_short(err: BaseException, interrupted: bool) -> bool:
    """Whether `err` is the cancellation an interrupt asked for (`interrupted`) and nothing else.

    False for a failure, and while the current task itself is being cancelled (the run is
    being cancelled as well: that must propagate).
    """
    cancelled = not isinstance(err, ActivityError) or isinstance(err.cause, CancelledError)
    current = asyncio.current_task()
    return interrupted and cancelled and not (current is not None and current.cancelling())
