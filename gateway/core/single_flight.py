"""One query in flight per key: a burst of viewers re-attaching to a thread shares each session read.

Queries add no history, but each one replays the session on a worker: fifty tabs opening the same
thread at once would be a hundred replays. Callers asking the same `key` while a read is in flight
share its answer (and its error); nothing is kept once it has answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["shared"]

T = TypeVar("T")
_in_flight: dict[tuple[str, ...], asyncio.Future[Any]] = {}


async def shared(key: tuple[str, ...], read: Callable[[], Awaitable[T]]) -> T:
    """`read()`'s answer, shared with every caller of the same `key` while it is in flight."""
    pending = _in_flight.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    _in_flight[key] = future
    try:
        value = await read()
    except BaseException as error:
        future.set_exception(error)
        future.exception()  # retrieved: no "never retrieved" warning when nobody shared it
        raise
    else:
        future.set_result(value)
        return value
    finally:
        del _in_flight[key]
