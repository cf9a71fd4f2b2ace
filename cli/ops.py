"""The Temporal side of the commands: connect, and follow a run's trace live, through the typed client.

Starting, steering and reading runs and sessions is the typed client's job
(`client.Runs`, `client.Sessions`); this module adds what only a terminal needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from pydantic import TypeAdapter
from rich.console import Console
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.service import RPCError

from cli import render
from cli.errors import CliError, describe, unreachable_message
from clients.base import Timeouts
from clients.runs import RunHandle, Runs
from clients.sessions import Sessions
from contracts import RunResult, Trace
from conversation import Entry
from hosting.connection import connect
from payloads.settings import SettingsError

CONNECT_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25
TIMEOUTS = Timeouts()
FOLLOW_TIMEOUTS = Timeouts(query=timedelta(seconds=5))
# How long the trace may stay unreadable before saying so: a new run has none until a worker picks it up.
SILENT_WAIT_S = 3.0

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


def runs_of(client: Client) -> Runs:
    """The typed client of runs, with the CLI's timeouts."""
    return Runs(client, timeouts=TIMEOUTS)


def sessions_of(client: Client) -> Sessions:
    """The typed client of sessions, with the CLI's timeouts."""
    return Sessions(client, timeouts=TIMEOUTS)


def following(client: Client, workflow_id: str) -> RunHandle:
    """A run's handle whose queries give up sooner, for polling its trace while it runs."""
    return Runs(client, timeouts=FOLLOW_TIMEOUTS).get(workflow_id)


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


async def follow(run: RunHandle, out: Console, address: str) -> RunResult:
    """Print the run's trace live until its result is in (see `watch`)."""
    return await watch(run, run.result(), out, address)


async def watch(run: RunHandle, outcome: Awaitable[T], out: Console, address: str) -> T:
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
                trace = await run.trace()
            except QUERY_FAILURES as error:
                failing_since = failing_since or time.monotonic()
                if not said_waiting and (finished or time.monotonic() - failing_since > SILENT_WAIT_S):
                    message = f"(trace not readable yet: {describe(error, address, run.workflow_id)})"
                    out.print(message, style="dim", markup=False, soft_wrap=True)
                    said_waiting = True
            else:
                failing_since = None
                last_seq, said_truncated = _print_new(out, trace, last_seq, said_truncated)
            if finished:
                break
            await asyncio.wait([result_task], timeout=POLL_INTERVAL_S)
    finally:
        if not result_task.done():
            result_task.cancel()
            await asyncio.wait([result_task])
            if not result_task.cancelled():
                # The SDK ends a cancelled wait for an Update in an error of its own: retrieve it
                # here, or asyncio reports it as unhandled when the process ends.
                result_task.exception()
    return result_task.result()
