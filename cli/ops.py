"""The Temporal side of the commands: connect, start and follow a run, query, update.

The workflow is addressed by its string names (`ReActRun`, `steer`, `trace`, ...)
so the client never imports workflow code, the same way any other client would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.service import RPCError

from cli import render
from cli.errors import CliError, describe, unreachable_message
from contracts import TASK_QUEUE, WORKFLOW_TYPE, Ack, RunInput, RunResult, RunState, Trace
from conversation import Context, Entry
from runtime.connection import connect
from runtime.settings import SettingsError

CONNECT_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25
FOLLOW_QUERY_TIMEOUT = timedelta(seconds=5)
QUERY_TIMEOUT = timedelta(seconds=10)
UPDATE_TIMEOUT = timedelta(seconds=30)
# How long the trace may stay unreadable before saying so: a new run has none until a worker picks it up.
SILENT_WAIT_S = 3.0

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

ENTRIES = TypeAdapter(list[Entry])
QUERY_FAILURES = (RPCError, RPCTimeoutOrCancelledError, WorkflowQueryFailedError, WorkflowQueryRejectedError)


async def open_client(address: str, namespace: str) -> Client:
    """Connect, failing within seconds with the 'start the dev server' hint if nothing answers."""
    try:
        return await asyncio.wait_for(connect(address, namespace), CONNECT_TIMEOUT_S)
    except SettingsError as error:
        raise CliError(str(error)) from None
    except (RuntimeError, TimeoutError, OSError) as error:
        raise CliError(unreachable_message(address)) from error


async def start(client: Client, run_input: RunInput, workflow_id: str) -> WorkflowHandle[Any, Any]:
    """Start a `ReActRun` on the agent's task queue."""
    return await client.start_workflow(
        WORKFLOW_TYPE, run_input, id=workflow_id, task_queue=TASK_QUEUE, result_type=RunResult
    )


async def _result(handle: WorkflowHandle[Any, Any]) -> RunResult:
    raw: object = await handle.result()
    return raw if isinstance(raw, RunResult) else RunResult.model_validate(raw)


def _print_new(out: Console, trace: Trace, last_seq: int, said_truncated: bool) -> tuple[int, bool]:
    """Print events after `last_seq`; say once that the trace is truncated. Returns the new marks."""
    for event in render.new_events(trace, last_seq):
        out.print(
            render.event_line(event), style=render.event_style(event.kind), markup=False, soft_wrap=True
        )
        last_seq = event.seq
    if trace.truncated and not said_truncated:
        out.print(render.TRUNCATED_NOTICE, style="dim", markup=False, soft_wrap=True)
        said_truncated = True
    return last_seq, said_truncated


async def follow(handle: WorkflowHandle[Any, Any], out: Console, address: str) -> RunResult:
    """Print the run's trace live until its result is in (see `watch`)."""
    return await watch(handle, _result(handle), out, address)


async def watch(handle: WorkflowHandle[Any, Any], outcome: Awaitable[T], out: Console, address: str) -> T:
    """Print the run's trace live (polling its `trace` query) until `outcome` is in; return it.

    `outcome` is the run's result, or for a session's run the session's record of
    the request. It is awaited concurrently with the polling; once it arrives the
    trace is read one last time so the final events are printed before the answer.
    A trace that cannot be read (no worker yet) is reported once and retried.
    """
    result_task = asyncio.ensure_future(outcome)
    last_seq, said_truncated, said_waiting = 0, False, False
    failing_since: float | None = None
    try:
        while True:
            finished = result_task.done()
            try:
                trace = await handle.query("trace", result_type=Trace, rpc_timeout=FOLLOW_QUERY_TIMEOUT)
            except QUERY_FAILURES as error:
                failing_since = failing_since or time.monotonic()
                if not said_waiting and (finished or time.monotonic() - failing_since > SILENT_WAIT_S):
                    message = f"(trace not readable yet: {describe(error, address, handle.id)})"
                    out.print(message, style="dim", markup=False, soft_wrap=True)
                    said_waiting = True
            else:
                failing_since = None
                if isinstance(trace, Trace):
                    last_seq, said_truncated = _print_new(out, trace, last_seq, said_truncated)
            if finished:
                break
            await asyncio.wait([result_task], timeout=POLL_INTERVAL_S)
    finally:
        if not result_task.done():
            result_task.cancel()
    return result_task.result()


async def query_state(handle: WorkflowHandle[Any, Any]) -> RunState:
    """The `state` query."""
    return await _query_model(handle, "state", RunState)


async def query_context(handle: WorkflowHandle[Any, Any]) -> Context:
    """The `context` query."""
    return await _query_model(handle, "context", Context)


async def query_trace(handle: WorkflowHandle[Any, Any]) -> Trace:
    """The `trace` query."""
    return await _query_model(handle, "trace", Trace)


async def query_thread(handle: WorkflowHandle[Any, Any]) -> list[Entry]:
    """The `thread` query, validated here because a list of a discriminated union is no single type."""
    raw: object = await handle.query("thread", rpc_timeout=QUERY_TIMEOUT)
    return ENTRIES.validate_python(raw)


async def _query_model(handle: WorkflowHandle[Any, Any], name: str, model: type[M]) -> M:
    raw: object = await handle.query(name, result_type=model, rpc_timeout=QUERY_TIMEOUT)
    return raw if isinstance(raw, model) else model.model_validate(raw)


async def update(handle: WorkflowHandle[Any, Any], name: str, payload: BaseModel) -> Ack:
    """Send an acknowledging Update and return the workflow's answer."""
    # By name: the overloads for typed workflow methods leave pyright strict with unknown parts.
    raw: object = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
        name, payload, result_type=Ack, rpc_timeout=UPDATE_TIMEOUT
    )
    return raw if isinstance(raw, Ack) else Ack.model_validate(raw)
