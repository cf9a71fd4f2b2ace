"""Streamed text as MCP progress notifications, coalesced while one is on its way.

A run streams its answer in small deltas (a few characters each). Sending one notification per
delta and waiting for each would hold the tool call behind the slowest client and spend the
gateway's event loop on hundreds of tiny messages; instead, text that arrives while a
notification is being sent goes out together in the next one. `progress` is the total of
characters sent so far and `message` the new text, so a client that joins the messages has the
answer as it was streamed. Everything reported is sent before the tool's result: leaving
`ProgressText` waits for the last notification (a client that went away is not waited for).
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from mcp.server.mcpserver import Context

__all__ = ["ProgressText"]


class ProgressText:
    """`report(text)` queues text for the caller's progress notifications; leaving the block flushes them."""

    def __init__(self, context: Context) -> None:
        """Notifications to the caller of `context` (none when it sent no progress token)."""
        self._context = context
        self._pending: list[str] = []
        self._sent = 0
        self._sending: asyncio.Task[None] | None = None

    async def report(self, text: str) -> None:
        """Queue `text`; it goes out with the next notification (never waits for the client)."""
        self._pending.append(text)
        if self._sending is None or self._sending.done():
            self._sending = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._sent += len(text)
            await self._context.report_progress(self._sent, None, text)

    async def __aenter__(self) -> ProgressText:
        """The reporter."""
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Send what is queued (or, when the call failed, drop it)."""
        task = self._sending
        if task is None:
            return
        if error is not None:
            task.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await task
