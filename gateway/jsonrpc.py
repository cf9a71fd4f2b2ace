"""A refusal in JSON-RPC 2.0's error shape, for the JSON-RPC endpoints (A2A's `/a2a/...`, MCP's `/mcp`).

The product code goes in `error.data.code`, so a client reads the same codes as everywhere else.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import GatewayError

__all__ = ["INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "jsonrpc_error_body"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


def jsonrpc_error_body(err: GatewayError, code: int = INVALID_REQUEST) -> dict[str, Any]:
    """`err` as a JSON-RPC error response (id null: the request was not read), its code in `data.code`."""
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": err.message, "data": {"code": err.code}},
    }
