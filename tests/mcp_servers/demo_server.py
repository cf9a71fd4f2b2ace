"""A small real MCP server (the `mcp` package's `MCPServer`, formerly FastMCP) for the tests.

    python tests/mcp_servers/demo_server.py                  # over stdio
    python tests/mcp_servers/demo_server.py --http 8765      # streamable HTTP on 127.0.0.1:8765/mcp

`MCP_TEST_STATE_DIR` (required by `hang_once` and `record`) is where the server leaves
files the tests read: which process started a call, which side effects happened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

IDEMPOTENCY_META_KEY = "durable-react/idempotency-key"

server = MCPServer("demo", log_level="WARNING")


def _state_dir() -> Path:
    return Path(os.environ["MCP_TEST_STATE_DIR"])


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """Upper-case a text, repeated.

    Args:
        text: What to shout.
        times: How many times.
    """
    return " ".join([text.upper()] * times)


@server.tool()
def fail(reason: str) -> str:
    """Always fail, with the given reason.

    Args:
        reason: The error message.
    """
    raise ToolError(f"cannot comply: {reason}")


@server.tool()
def admin_reset() -> str:
    """A tool the tests never allow: it must stay invisible to the model."""
    return "everything deleted"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def hang_once(label: str) -> str:
    """Hang on the first call for `label` (so a test can kill this process); answer on later calls.

    Args:
        label: Names the call across server restarts.
    """
    marker = _state_dir() / f"hang-{label}.pid"
    if marker.exists():
        return f"recovered {label} in {os.getpid()}"
    marker.write_text(str(os.getpid()))
    await asyncio.sleep(600)
    return "unreachable"


@server.tool()
def record(note: str, ctx: Context) -> dict[str, Any]:
    """Record a note once per idempotency key (a side effect that must not repeat).

    Args:
        note: What to record.
        ctx: The request's context (its `_meta` carries the key).
    """
    meta: dict[str, Any] = dict(ctx.request_context.meta or {})
    key = str(meta.get(IDEMPOTENCY_META_KEY, ""))
    log = _state_dir() / "records.jsonl"
    seen = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    duplicate = any(entry["key"] == key for entry in seen)
    if not duplicate:
        with log.open("a") as out:
            out.write(json.dumps({"key": key, "note": note}) + "\n")
    return {"key": key, "duplicate": duplicate}


def with_faults(app: Any) -> Any:
    """ASGI wrapper: answer the next `tools/call` POSTs with the faults queued in `<state>/http-faults`.

    One fault per line, used once each: `500` (an HTTP error), `400` (a JSON-RPC error,
    code -32602, in a 400 response) or `bad-result` (a result that breaks the output schema).
    """

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        fault = _next_fault() if b'"tools/call"' in body else None
        if fault is None:
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await app(scope, replay, send)
            return
        request_id = json.loads(body).get("id")
        if fault == "500":
            status, content_type, payload = 500, b"text/plain", b"injected failure"
        elif fault == "bad-result":  # breaks `add`'s output schema (an integer `result`)
            bad = {"content": [{"type": "text", "text": "x"}], "structuredContent": {"result": "x"}}
            status, content_type = 200, b"application/json"
            payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": bad}).encode()
        else:
            error = {"code": -32602, "message": "injected: bad params"}
            reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
            status, content_type, payload = 400, b"application/json", json.dumps(reply).encode()
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]}
        )
        await send({"type": "http.response.body", "body": payload})

    return asgi


def _next_fault() -> str | None:
    faults = _state_dir() / "http-faults"
    if not faults.exists():
        return None
    first, *rest = faults.read_text().splitlines() or [""]
    faults.write_text("".join(f"{line}\n" for line in rest))
    return first.strip() or None


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    options = parser.parse_args()
    if options.http:
        import uvicorn

        app = with_faults(server.streamable_http_app(host="127.0.0.1"))
        uvicorn.run(app, host="127.0.0.1", port=options.http, log_level="warning")
    else:
        server.run()
