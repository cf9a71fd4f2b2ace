"""MCP servers as tool sources: their tools, by allow-list, in the worker's `ToolRegistry`.

At start-up the worker connects to every configured server, lists its tools and
registers the allowed ones as `<server>__<tool>` with the server's own JSON schema, so
the model sees them like any other tool. Each call is a `run_tool` activity like any
other (the run's timeout, retries and error results apply):

- the tool's result: its structured content if it has any, else its text (content
  blocks that are not text are described, their data left out);
- the tool reports an error (`isError`): a non-retryable `tool_error` the model reads;
- the server cannot be reached or dies during the call: a retryable `connection`
  failure; Temporal retries it and the retry reconnects (a stdio server is restarted);
- the server rejects the request itself (a JSON-RPC error): a non-retryable `tool_error`.

Every call carries its idempotency key in the request's `_meta`
(`durable-react/idempotency-key`), the same on every retry of the call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import mcp_types
from pydantic import JsonValue

from activities.tools.mcp_config import McpConfigError, McpServerConfig, McpStartError
from activities.tools.mcp_connection import McpConnection, McpRequestError, McpUnavailableError
from activities.tools.tool_registry import ToolFailure, ToolRegistry
from contracts.errors import CONNECTION, TOOL_ERROR

log = logging.getLogger(__name__)

SEPARATOR = "__"
"""Between the server's name and the tool's: `files__read_text_file`."""
IDEMPOTENCY_META_KEY = "durable-react/idempotency-key"
MAX_TOOL_NAME = 64

McpToolFunction = Callable[..., Coroutine[Any, Any, JsonValue]]


def tool_name(server: str, tool: str) -> str:
    """The registry name of a server's tool."""
    return f"{server}{SEPARATOR}{tool}"


@asynccontextmanager
async def mcp_tools(servers: dict[str, McpServerConfig], registry: ToolRegistry) -> AsyncIterator[list[str]]:
    """Connect to `servers`, register their allowed tools in `registry`, and close them all on exit.

    Yields:
        The registered tool names, sorted.

    Raises:
        McpStartError: A server cannot be reached or lists no tool it is configured to offer.
        McpConfigError: An allowed tool does not exist, or a name is invalid or already registered.
    """
    connections = [McpConnection(name, config) for name, config in servers.items()]
    try:
        # Every listing finishes (or fails) before anything is closed: none is left running.
        listings = await asyncio.gather(*(_list(c) for c in connections), return_exceptions=True)
        staged = ToolRegistry()
        for connection, tools in zip(connections, listings, strict=True):
            if isinstance(tools, BaseException):
                raise tools
            _register(staged, connection, tools)
        try:
            registry.include(staged)
        except ValueError as exc:
            raise McpConfigError(f"MCP tools clash with tools registered before: {exc}") from None
        names = staged.names()
        if connections:
            log.info("MCP tools: %s", ", ".join(names) or "(none)")
        yield names
    finally:
        await asyncio.gather(*(connection.close() for connection in connections))


def mcp_tool_function(connection: McpConnection, tool: str) -> McpToolFunction:
    """The registry function that calls `tool` on `connection` and maps its outcome (see the module)."""

    async def call_mcp_tool(arguments: dict[str, Any], idempotency_key: str) -> JsonValue:
        try:
            result = await connection.call_tool(tool, arguments, meta={IDEMPOTENCY_META_KEY: idempotency_key})
        except McpUnavailableError as exc:
            raise ToolFailure(str(exc), retryable=True, type=CONNECTION) from None
        except McpRequestError as exc:
            raise ToolFailure(str(exc), type=TOOL_ERROR) from None
        if result.is_error:
            message = _text(result.content) or f"the MCP tool {tool!r} failed without a message"
            raise ToolFailure(message, type=TOOL_ERROR, details={"server": connection.name, "tool": tool})
        return result_value(result)

    return call_mcp_tool


def result_value(result: mcp_types.CallToolResult) -> JsonValue:
    """What the model receives from a successful call: structured content, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    blocks = result.content
    if all(isinstance(block, mcp_types.TextContent) for block in blocks):
        texts = [block.text for block in blocks if isinstance(block, mcp_types.TextContent)]
        return texts[0] if len(texts) == 1 else list[JsonValue](texts)
    return [_describe(block) for block in blocks]


async def _list(connection: McpConnection) -> list[mcp_types.Tool]:
    try:
        return await connection.list_tools()
    except (McpUnavailableError, McpRequestError) as exc:
        raise McpStartError(f'{exc} (check its mcpServers entry, or mark it "disabled": true)') from None


def _register(registry: ToolRegistry, connection: McpConnection, tools: list[mcp_types.Tool]) -> None:
    server, config = connection.name, connection.config
    offered = {tool.name: tool for tool in tools}
    if config.all_tools:
        chosen = list(offered.values())
    else:
        missing = [name for name in config.tools if name not in offered]
        if missing:
            raise McpConfigError(
                f"MCP server {server!r} has no tool {', '.join(map(repr, missing))}; "
                f"it offers: {', '.join(sorted(offered)) or '(none)'}"
            )
        chosen = [offered[name] for name in config.tools]
    unknown = (
        []
        if isinstance(config.approval_required, bool)
        else [name for name in config.approval_required if name not in offered]
    )
    if unknown:
        raise McpConfigError(
            f"MCP server {server!r}: approval_required names no tool of it: {', '.join(map(repr, unknown))}; "
            f"it offers: {', '.join(sorted(offered)) or '(none)'}"
        )
    for tool in chosen:
        name = tool_name(server, tool.name)
        try:
            registry.register_schema(
                mcp_tool_function(connection, tool.name),
                name=name,
                description=tool.description or tool.title or tool.name,
                parameters=tool.input_schema,
                requires_approval=config.needs_approval(tool.name),
            )
        except ValueError as exc:
            if config.all_tools:  # one odd tool among all of them does not stop the worker
                log.warning("MCP server %r: skipping tool %r: %s", server, tool.name, exc)
                continue
            raise McpConfigError(f"MCP server {server!r}, tool {tool.name!r}: {exc}") from None


def _text(blocks: list[mcp_types.ContentBlock]) -> str:
    return "\n".join(block.text for block in blocks if isinstance(block, mcp_types.TextContent)).strip()


def _describe(block: mcp_types.ContentBlock) -> JsonValue:
    """A content block for the model: text as is, binary data replaced by its type and size."""
    if isinstance(block, mcp_types.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return {"type": block.type, "mime_type": block.mime_type, "base64_chars": len(block.data)}
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return {"type": "resource", "uri": resource.uri, "text": resource.text}
        return {"type": "resource", "uri": resource.uri, "mime_type": resource.mime_type}
    return {"type": "resource_link", "uri": block.uri, "name": block.name}
