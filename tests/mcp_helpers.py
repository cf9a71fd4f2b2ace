"""What the MCP tests share: the official `mcp` client of a gateway's `/mcp`, a tool's structured result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.gateway_helpers import GatewayServer, auth


@asynccontextmanager
async def mcp_client(gw: GatewayServer, token: str) -> AsyncIterator[Client]:
    """The SDK's client of the gateway's `/mcp`, calling with `token`."""
    async with (
        httpx2.AsyncClient(headers=auth(token), timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(f"{gw.url}/mcp", http_client=http)) as client,
    ):
        yield client


def result_of(result: CallToolResult) -> dict[str, Any]:
    """A tool call's structured content (asserted present)."""
    assert result.structured_content is not None
    return result.structured_content
