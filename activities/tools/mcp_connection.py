"""One worker's connection to one MCP server, reopened after the server dies.

The `mcp` client is a structured-concurrency context (anyio task groups): it must be
entered and left by the same task, and a transport failure cancels whatever runs inside
it. So each connection is owned by a background task that only opens the client, waits
and closes it; tool calls come from activity tasks and are raced against the
connection's end, so a call on a server that dies fails at once instead of hanging.

A connection that breaks is not reopened eagerly: the next call (Temporal's retry of
the failed one, or any later call) opens a new one, starting a new subprocess for a
stdio server.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar, cast

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from activities.tools.mcp_config import McpServerConfig

log = logging.getLogger(__name__)
T = TypeVar("T")

CLOSE_TIMEOUT_S = 10.0
"""Longest wait for a connection to close; the SDK stops a stdio server within about 6 s."""
# Connection lost, timed out, or an HTTP 5xx (which the transport reports as INTERNAL_ERROR).
_TRANSIENT_CODES = frozenset(
    {mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT, mcp_types.INTERNAL_ERROR}
)
_MAX_LIST_PAGES = 100


class McpUnavailableError(Exception):
    """The server cannot be reached, or the connection broke during the call: worth a retry."""


class McpRequestError(Exception):
    """The server rejected the request itself (a JSON-RPC error): a retry would fail the same way."""


class _Session:
    """One open client: ready once connected, `ended` once it is closed or broke."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.ready = asyncio.Event()
        self.ended = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None


class McpConnection:
    """A reconnecting connection to one configured MCP server."""

    def __init__(self, name: str, config: McpServerConfig) -> None:
        self.name = name
        self.config = config
        self._session: _Session | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server offers (all pages).

        Raises:
            McpUnavailableError: The server cannot be reached.
            McpRequestError: The server refused to list its tools.
        """
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_LIST_PAGES):

            async def list_page(client: Client, page: str | None = cursor) -> mcp_types.ListToolsResult:
                return await client.list_tools(cursor=page, cache_mode="bypass")

            page = await self._request(list_page)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call `tool`; a tool-level failure comes back as a result with `is_error`.

        Raises:
            McpUnavailableError: The server cannot be reached or the connection broke.
            McpRequestError: The server rejected the request (not the tool's own failure).
        """

        async def call(client: Client) -> mcp_types.CallToolResult:
            return await client.call_tool(tool, arguments, meta=cast(mcp_types.RequestParamsMeta, meta))

        return await self._request(call)

    async def close(self) -> None:
        """Close the connection (a stdio server is stopped); later calls fail."""
        self._closed = True
        async with self._lock:
            session, self._session = self._session, None
        if session is not None:
            await _end(session)

    async def _request(self, send: Callable[[Client], Awaitable[T]]) -> T:
        session = await self._open()
        client = session.client
        assert client is not None
        request = asyncio.ensure_future(send(client))
        ended = asyncio.ensure_future(session.ended.wait())
        try:
            await asyncio.wait({request, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not request.done():
                request.cancel()
                await asyncio.wait({request}, timeout=CLOSE_TIMEOUT_S)
        if request.cancelled():
            raise McpUnavailableError(f"{self._label()}: the connection broke ({_reason(session.error)})")
        try:
            return request.result()
        except MCPError as exc:
            if exc.code in _TRANSIENT_CODES:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    await self._discard(session)
                raise McpUnavailableError(f"{self._label()}: {exc.message}") from None
            problem = f"{exc.message} (code {exc.code})"
            raise McpRequestError(f"{self._label()} rejected the request: {problem}") from None
        except (
            OSError,
            httpx2.HTTPError,
            TimeoutError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            await self._discard(session)
            raise McpUnavailableError(f"{self._label()}: {_reason(exc)}") from None
        except (ValidationError, RuntimeError) as exc:
            # A result that breaks the protocol or the tool's output schema: a retry gets the same.
            raise McpRequestError(
                f"{self._label()} answered with an invalid result: {_reason(exc)}"
            ) from None

    async def _open(self) -> _Session:
        """The live session, connecting first if there is none (one connect at a time)."""
        async with self._lock:
            if self._closed:
                raise McpUnavailableError(f"{self._label()}: the worker is shutting down")
            current = self._session
            if current is not None and not current.ended.is_set():
                return current
            session = _Session()
            # A fresh context: the owner must not inherit the calling activity's context.
            session.task = asyncio.create_task(self._own(session), context=contextvars.Context())
            try:
                await asyncio.wait_for(session.ready.wait(), self.config.connect_timeout_s)
            except TimeoutError:
                await _end(session)
                raise McpUnavailableError(
                    f"{self._label()}: no answer within {self.config.connect_timeout_s:g}s"
                ) from None
            except BaseException:
                # The caller was cancelled (its activity timed out): leave no connection behind.
                session.stop.set()
                session.task.cancel()
                raise
            if session.client is None:
                await _end(session)
                raise McpUnavailableError(f"{self._label()}: cannot connect ({_reason(session.error)})")
            self._session = session
            log.info("MCP server %r connected (%s)", self.name, self.config.describe())
            return session

    async def _own(self, session: _Session) -> None:
        """Open the client, hold it until told to stop or until it breaks, then close it."""
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(Client(await self._target(stack)))
                session.client = client
                session.ready.set()
                await session.stop.wait()
        except BaseException as exc:  # the owner reports every ending, cancellation included
            session.error = exc
            if session.client is not None and not session.stop.is_set():
                log.warning("MCP server %r: connection lost: %s", self.name, _reason(exc))
        finally:
            session.ended.set()
            session.ready.set()

    async def _target(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if config.command is not None:
            return StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
            )
        assert config.url is not None
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return streamable_http_client(config.url, http_client=http)

    async def _discard(self, session: _Session) -> None:
        async with self._lock:
            if self._session is session:
                self._session = None
        await _end(session)

    def _label(self) -> str:
        return f"MCP server {self.name!r} ({self.config.describe()})"


async def _end(session: _Session) -> None:
    """Stop the owner task and wait for it (bounded); a stuck owner is cancelled."""
    session.stop.set()
    task = session.task
    if task is None or task.done():
        return
    # A connection still being opened has nothing to close gracefully: cancel it.
    pending = {task} if session.client is None else (await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S))[1]
    if pending:
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)


def _reason(exc: BaseException | None) -> str:
    """A one-line description of why a connection failed, from the innermost exceptions."""
    if exc is None:
        return "closed"
    if isinstance(exc, BaseExceptionGroup):
        parts = [_reason(inner) for inner in exc.exceptions]  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType, reportUnknownArgumentType]
        return "; ".join(dict.fromkeys(parts))
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
