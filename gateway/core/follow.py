"""Following a run to its end through the hub: its events (one subscription for all), then its result.

The result is read while the hub delivers (a long poll, no history), so it is there when the
run's terminal trace event is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from temporalio.service import RPCError

from clients.errors import RejectedError
from contracts.run import TERMINAL_KINDS, RunResult
from contracts.stream import TraceItem
from gateway.context import GatewayContext
from gateway.feed.hub import HubItem

__all__ = ["RunEnd", "follow_run", "is_terminal"]

RESULT_ATTEMPTS = 3


@dataclass(frozen=True)
class RunEnd:
    """A followed run has ended: its result, or the refusal its result raised (or neither: unreadable)."""

    result: RunResult | None = None
    rejection: RejectedError | None = None


def is_terminal(item: HubItem) -> bool:
    """Whether `item` is its run's terminal trace event (`contracts.run.TERMINAL_KINDS`)."""
    return isinstance(item.event, TraceItem) and item.event.event.kind in TERMINAL_KINDS


async def follow_run(ctx: GatewayContext, run_id: str) -> AsyncIterator[HubItem | RunEnd]:
    """The run's events through the hub (every one, in order, from its start), then `RunEnd`.

    Raises:
        RPCError: the hub could not follow the run (e.g. `NOT_FOUND`).
    """
    run = ctx.runs.get(run_id)
    ending = asyncio.ensure_future(run.result())
    try:
        async for item in ctx.hub.follow(run_id):
            yield item
            if is_terminal(item):
                break
        yield await _ended(ending, run.result)
    finally:
        ending.cancel()
        with contextlib.suppress(BaseException):
            await ending


async def _ended(ending: asyncio.Future[RunResult], again: Callable[[], Awaitable[RunResult]]) -> RunEnd:
    """The run's end; the early long poll may have failed (a viewer that read slowly): read it again."""
    for attempt in range(RESULT_ATTEMPTS):
        try:
            return RunEnd(result=await (ending if attempt == 0 else again()))
        except RejectedError as rejection:
            return RunEnd(rejection=rejection)
        except RPCError:
            await asyncio.sleep(0.2 * attempt)
    return RunEnd()
