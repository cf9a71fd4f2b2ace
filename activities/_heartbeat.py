"""Heartbeat while a long call runs, so Temporal cancellation and timeouts reach it.

Temporal only delivers an activity's cancellation (and detects a dead worker
through the heartbeat timeout) when the activity heartbeats. LLM and tool calls
are single long awaits, so a background task heartbeats on their behalf.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")


async def _beat(interval_s: float) -> None:
    # The first beat waits one interval: a call that ends sooner costs the server no heartbeat
    # RPC (most tool calls and fast model answers; under load those RPCs cost throughput).
    while True:
        await asyncio.sleep(interval_s)
        activity.heartbeat()


async def with_heartbeat(awaitable: Awaitable[T], interval_s: float = 1.0) -> T:
    """Await `awaitable` while heartbeating every `interval_s` seconds.

    Must run inside an activity. The first heartbeat comes after `interval_s`, so a
    call that ends sooner sends none. The heartbeat task is always stopped before
    returning, whether the awaitable succeeds, raises or is cancelled.

    Args:
        awaitable: The long-running call (an LLM request, a tool).
        interval_s: Seconds between heartbeats; the SDK throttles them further
            to a fraction of the activity's heartbeat timeout.

    Returns:
        The awaitable's result.
    """
    beat = asyncio.create_task(_beat(interval_s))
    try:
        return await awaitable
    finally:
        beat.cancel()
        await asyncio.wait({beat})
        if not beat.cancelled():
            # Retrieve a heartbeat failure so asyncio does not log it as unhandled.
            beat.exception()
