"""Sending an Update so that the server's transient refusals do not reach the caller.

Two refusals of the Temporal server mean "not now", not "no":

* `RESOURCE_EXHAUSTED` "limit on number of concurrent in-flight updates": a workflow
  admits a bounded number of Updates at once (`history.maxInFlightUpdates`, 10 by
  default). A session's steer/inject/cancel Update stays in flight until its run
  answers, so a burst of controls can meet the limit.
* `WorkflowNotReadyFailure` ("unexpected workflow task failure", "Workflow Task in
  failed state"): the workflow task that would have delivered the Update was refused or
  failed, typically `UnhandledCommand` when the workflow tried to complete as the Update
  arrived. The next task (Temporal retries it) delivers it. A workflow whose tasks fail
  for good still fails the call, after `RETRY_FOR`.

Both are retried with the same Update id (the server deduplicates by id, so a retry can
never apply an Update twice), with backoff, up to `RETRY_FOR`. Every other error is
raised unchanged.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any, TypeVar

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

RETRY_FOR = timedelta(seconds=30)
"""How long transient refusals are retried before the last one is raised."""

_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 1.0


def is_transient(error: RPCError) -> bool:
    """Whether the server refused the Update for now only (see the module docstring)."""
    if error.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return True
    if error.status == RPCStatusCode.UNAVAILABLE and "update was aborted" in error.message:
        return True  # the server dropped the admitted Update (its workflow task failed): send it again
    not_ready = b"WorkflowNotReadyFailure" in error.raw_grpc_status
    return error.status == RPCStatusCode.FAILED_PRECONDITION and not_ready


async def execute_update(
    handle: WorkflowHandle[Any, Any],
    name: str,
    payload: object,
    result_type: type[T],
    rpc_timeout: timedelta | None = None,
) -> T:
    """`handle.execute_update(name, payload)`, retrying the server's transient refusals."""
    update_id = str(uuid.uuid4())
    deadline = time.monotonic() + RETRY_FOR.total_seconds()
    backoff = _FIRST_BACKOFF_S
    while True:
        try:
            # By name: the overloads for typed workflow methods leave pyright strict with unknown parts.
            return await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                name, payload, id=update_id, result_type=result_type, rpc_timeout=rpc_timeout
            )
        except RPCError as error:
            if not is_transient(error) or time.monotonic() + backoff > deadline:
                raise
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, _MAX_BACKOFF_S)
