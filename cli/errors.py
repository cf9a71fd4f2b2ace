"""Turning failures into one clear line and exit code 1, never a traceback.

A CLI user needs to know what went wrong and what to do next (start the server,
check the workflow id, start a worker), not where in the SDK it was raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from pydantic import ValidationError
from rich.console import Console
from temporalio.client import (
    RPCTimeoutOrCancelledError,
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from contracts import TASK_QUEUE
from payloads.blob_store import BlobMissingError, BlobStoreError
from payloads.claim_check import PayloadClaimError
from payloads.codec import PayloadDecryptionError

err_console = Console(stderr=True, highlight=False)

NO_WORKER_HINT = f"is a worker running on task queue {TASK_QUEUE!r}? start one with `python worker.py`"


class CliError(Exception):
    """An expected failure whose message is already the line to show the user."""


def unreachable_message(address: str) -> str:
    """What to say when no Temporal server answers at `address`."""
    return (
        f"cannot reach Temporal at {address}: is the worker's dev server running? "
        "start it with `python worker.py --dev`"
    )


def validation_message(error: ValidationError, what: str) -> str:
    """A pydantic error squeezed into one line: where and why, for the first few problems."""
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in error.errors()[:3]
    ]
    more = error.error_count() - len(problems)
    return f"invalid {what}: {'; '.join(problems)}" + (f" (+{more} more)" if more > 0 else "")


def is_rejection(error: BaseException) -> bool:
    """Whether the client or the workflow refused a request with a code (`busy`, `invalid_input`, ...)."""
    if isinstance(error, RejectedError):
        return True
    return isinstance(error, WorkflowUpdateFailedError) and rejection_code(error.cause) is not None


def rejection_code(cause: BaseException) -> str | None:
    """The stable code of an Update rejection: the type of the ApplicationError it raised."""
    return cause.type if isinstance(cause, ApplicationError) and cause.type else None


def _update_message(cause: BaseException) -> str:
    """`rejected: <code> (<message>)` for a coded rejection, like an Ack's; else the failure."""
    code = rejection_code(cause)
    if code is None:
        return f"update failed: {cause}"
    message = cause.message if isinstance(cause, ApplicationError) else ""
    return f"rejected: {code} ({message})" if message else f"rejected: {code}"


def _rpc_message(error: RPCError, address: str, workflow_id: str | None) -> str:
    text = error.message
    if error.status == RPCStatusCode.NOT_FOUND:
        if "already completed" in text or "already finished" in text:
            return f"workflow {workflow_id} has already finished, so it no longer accepts this"
        if text.lower().startswith("namespace"):
            return f"{text} (choose one with --namespace)"
        return f"workflow not found: {workflow_id} ({text})"
    if error.status == RPCStatusCode.UNAVAILABLE:
        return unreachable_message(address)
    if error.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
        return f"no answer from workflow {workflow_id} in time: {NO_WORKER_HINT}"
    return f"Temporal error ({error.status.name if error.status else 'unknown'}): {text}"


def describe(error: BaseException, address: str, workflow_id: str | None) -> str:
    """The one line shown for `error`; unknown errors still get one line, with their type."""
    match error:
        case CliError():
            return str(error)
        case RejectedError():
            return f"rejected: {error.code} ({error.message})"
        case RPCError():
            return _rpc_message(error, address, workflow_id)
        case WorkflowAlreadyStartedError():
            return f"a workflow with id {error.workflow_id} already exists: choose another --id"
        case WorkflowQueryFailedError():
            return f"query failed: {error.message}"
        case WorkflowQueryRejectedError():
            return f"query rejected: workflow status is {error.status}"
        case WorkflowUpdateFailedError():
            return _update_message(error.cause)
        case RPCTimeoutOrCancelledError():
            return f"no answer from workflow {workflow_id} in time: {NO_WORKER_HINT}"
        case WorkflowFailureError():
            return f"run failed: {error.cause}"
        case ValidationError():
            return validation_message(error, "data")
        case json.JSONDecodeError():
            return f"invalid JSON: {error}"
        case OSError():
            return f"{error.strerror or error}: {error.filename}" if error.filename else str(error)
        case BlobMissingError() | BlobStoreError() | PayloadClaimError() | PayloadDecryptionError():
            return str(error)
        case _:
            return f"unexpected error: {type(error).__name__}: {error}"


def error_line(error: BaseException, address: str, workflow_id: str | None) -> str:
    """The line shown for a failure: `error: ...`, or `rejected: <code> (...)` for a coded rejection."""
    prefix = "" if is_rejection(error) else "error: "
    return f"{prefix}{describe(error, address, workflow_id)}"


@contextmanager
def reported(address: str, workflow_id: str | None = None, resume: str | None = None) -> Iterator[None]:
    """Print any failure inside the block as one line on stderr and exit 1 (130 on Ctrl-C).

    A coded Update rejection reads like an Ack's (`rejected: busy (...)`), without
    the `error:` prefix. `resume` is what Ctrl-C says continues (default: the run).
    """
    try:
        yield
    except KeyboardInterrupt:
        what = resume or f"the run continues, see `python client.py show {workflow_id}`"
        where = f": {what}" if workflow_id or resume else ""
        err_console.print(f"interrupted{where}", markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except typer.Exit:
        raise
    except Exception as error:
        err_console.print(error_line(error, address, workflow_id), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
