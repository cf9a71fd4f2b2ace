"""MCP: the agents as MCP tools at `/mcp`, over the request core.

`server` (the endpoint and its tools), `views` (handles and what a tool shows), `progress`
(streamed text as progress notifications).
"""

from gateway.mcp.server import McpEndpoint

__all__ = ["McpEndpoint"]
