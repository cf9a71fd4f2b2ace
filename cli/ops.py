"""The Temporal side of the commands: connect, and follow a run live (its stream, or its trace query).

Starting, steering and reading runs and sessions is the typed client's job
(`client.Runs`, `client.Sessions`); this module adds what only a terminal needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from pydantic import TypeAdapter
from rich.console import Console
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from cli import render, render_follow
from cli.errors import CliError, describe, unreachable_message
from clients.base import Timeouts
from clients.runs import RunHandle, Runs
from clients.sessions import Sessions
from contracts import RunResult, Trace, TraceEvent
from contracts.stream import DeltaEvent, TraceItem
from conversation import Entry
from hosting.connection import connect
from settings.env_values import SettingsError

CONNECT_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25
TIMEOUTS = Timeouts()
FOLLOW_TIMEOUTS = Timeouts(query=timedelta(seconds=5))
# How long the trace may stay unreadable before saying so: a new run has none until a worker picks it up.
SILENT_WAIT_S = 3.0

T = TypeVar("T")
OnEvent = Callable[[TraceEvent], None] | None
"""Called with each trace event of a followed run once its line is printed (the chat's approvals)."""

ENTRIES = TypeAdapter(list[Entry])
QUERY_FAILURES = (RPCError, RPCTimeoutOrCancelledError, WorkflowQueryFailedError, WorkflowQueryRejectedError)
STREAM_FAILURES = (*QUERY_FAILURES, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError)
# How long a run's stream may take to end once the result is in (it ends with the run).
DRAIN_S = 10.0


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


def _print_new(
    out: Console, trace: Trace, last_seq: int, said_truncated: bool, on_event: OnEvent = None
) -> tuple[int, bool]:
    """Print events after `last_seq`; say once that the trace is truncated. Returns the new marks."""
    for event in render.new_events(trace, last_seq):
        out.print(
            render.event_line(event), style=render.event_style(event.kind), markup=False, soft_wrap=True
        )
        last_seq = event.seq
        if on_event is not None:
            on_event(event)
    if trace.truncated and not said_truncated:
        out.print(render.TRUNCATED_NOTICE, style="dim", markup=False, soft_wrap=True)
        said_truncated = True
    return last_seq, said_truncated


async def follow(run: RunHandle, out: Console, address: str, *, stream: bool = True) -> RunResult:
    """Print the run's trace live until its result is in (see `watch`)."""
    return await watch(run, run.result(), out, address, stream=stream)


async def watch(
    run: RunHandle,
    outcome: Awaitable[T],
    out: Console,
    address: str,
    *,
    stream: bool = True,
    on_event: OnEvent = None,
) -> T:
    """Print the run's events live until `outcome` is in; return it.

    `outcome` is the run's result, or for a session's run the session's record of the
    request; it is awaited concurrently. With `stream`, the run's live stream is followed
    (`cli.render_follow`: trace lines, and the LLM's text as it comes) to the run's end; a stream
    that cannot be followed (a worker without streams, a run that never started) falls
    back to polling the `trace` query, from the last event printed. `on_event` sees each
    trace event printed.
    """
    result_task = asyncio.ensure_future(outcome)
    try:
        last_seq = 0
        if stream:
            streamed, last_seq = await _stream(run, result_task, out, address, on_event)
            if streamed:
                return await result_task
        return await _poll(run, result_task, out, address, last_seq, on_event)
    finally:
        await _settle(result_task)


async def _stream(
    run: RunHandle, result: asyncio.Future[T], out: Console, address: str, on_event: OnEvent
) -> tuple[bool, int]:
    """Follow the run's stream to its end: (True, last seq), or (False, last seq) when it failed.

    A run that does not exist yet (a queued request's) is waited for. Once `result` is
    in, a stream that has begun gets `DRAIN_S` to end (it ends with the run) before the
    rest of the trace is read by polling.
    """
    progress = _Progress()
    streaming = asyncio.ensure_future(progress.show(run, out, on_event))
    try:
        await asyncio.wait([streaming, result], return_when=asyncio.FIRST_COMPLETED)
        if not streaming.done() and progress.began:
            await asyncio.wait([streaming], timeout=DRAIN_S)
        if not streaming.done():
            return False, progress.last_seq
        error = streaming.exception()
        if error is None:
            return True, progress.last_seq
        if not isinstance(error, STREAM_FAILURES):
            raise error
        reason = describe(error, address, run.workflow_id)
        out.print(
            f"(live stream unavailable, following the trace query: {reason})",
            style="dim",
            markup=False,
            soft_wrap=True,
        )
        return False, progress.last_seq
    finally:
        await _settle(streaming)


class _Progress:
    """Shows a run's stream, remembering the last trace event printed (for a fallback to polling)."""

    last_seq = 0
    began = False

    async def show(self, run: RunHandle, out: Console, on_event: OnEvent) -> None:
        while True:
            try:
                self.last_seq = await render_follow.show_stream(self._tracked(run.events()), out, on_event)
                return
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND or self.began:
                    raise
            await asyncio.sleep(POLL_INTERVAL_S)  # the run has not started yet

    async def _tracked(
        self, events: AsyncIterator[DeltaEvent | TraceItem]
    ) -> AsyncIterator[DeltaEvent | TraceItem]:
        async for event in events:
            self.began = True
            if isinstance(event, TraceItem):
                self.last_seq = event.event.seq
            yield event


async def _poll(
    run: RunHandle,
    result_task: asyncio.Future[T],
    out: Console,
    address: str,
    last_seq: int,
    on_event: OnEvent = None,
) -> T:
    """Print the run's trace by polling its `trace` query until `result_task` is done.

    Once it is, the trace is read one last time so the final events are printed before
    the answer. A trace that cannot be read (no worker yet) is reported once and retried.
    """
    said_truncated, said_waiting = False, False
    failing_since: float | None = None
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
            last_seq, said_truncated = _print_new(out, trace, last_seq, said_truncated, on_event)
        if finished:
            return result_task.result()
        await asyncio.wait([result_task], timeout=POLL_INTERVAL_S)


async def _settle(task: asyncio.Future[object] | asyncio.Future[T]) -> None:
    """Cancel `task` if it still runs, and retrieve its error so asyncio does not report it at exit."""
    if not task.done():
        task.cancel()
        await asyncio.wait([task])
    if not task.cancelled():
        # The SDK ends a cancelled wait for an Update in an error of its own: retrieve it.
        task.exception()
