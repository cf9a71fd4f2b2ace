"""`UploadBudget`: the upload bodies (`POST /api/files`) one gateway holds in memory at once.

The guard reads a body whole before the route stores it, so 20 concurrent 10 MiB uploads would
hold 200 MiB (and briefly twice that). Each upload takes its declared size (or its route's body
limit when it declares none) from the budget before its body is read, and gives it back when its
answer is sent; an upload that does not fit waits, its bytes left unread in the connection (TCP
holds the sender back). One larger than the whole budget runs when it is alone. Nothing is
refused: the budget bounds memory, the body limit bounds each request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["UploadBudget"]


class UploadBudget:
    """At most `capacity` bytes of upload bodies held at once (a larger one alone)."""

    def __init__(self, capacity: int) -> None:
        """Hold at most `capacity` bytes."""
        self.capacity = capacity
        self.held = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Take `size` bytes of the budget for the block (waiting until they fit)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.held == 0 or self.held + size <= self.capacity)
            self.held += size
        try:
            yield
        finally:
            async with self._changed:
                self.held -= size
                self._changed.notify_all()
