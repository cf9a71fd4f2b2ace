"""Output schemas an attacker or a clumsy client sends, and the answers that make them costly."""

from __future__ import annotations

import asyncio
import json
from typing import Any

EVIL_PATTERNS = [
    r"^(a+)+$",
    r"^(a|a)*$",
    r"^(a|aa)+$",
    r"^(\w+\s?)*$",
    r"(.*a){20}",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
]
"""Patterns that backtrack exponentially on `EVIL_TEXT` under Python's `re`."""
EVIL_TEXT = "a" * 32 + "!"
COSTLY_TO_COMPILE = [r"(a{1000}){1000}", r"((a{100}){100}){100}", r"(?:x{1000,}){1000,}"]


def exponential_refs(levels: int = 40) -> dict[str, Any]:
    """Each level refers to the next twice: 2**levels checks for one string."""
    defs: dict[str, Any] = {
        f"l{i}": {"allOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"l{levels}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/l0"}


def outside_refs(port: int, secret_file: str) -> list[dict[str, Any]]:
    """Schemas whose `$ref` points outside themselves: a local HTTP server, a file, a nested scope."""
    return [
        {"$ref": f"http://127.0.0.1:{port}/internal.json"},
        {"$ref": f"file://{secret_file}"},
        {"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/a.json#/x"}}},
        {"$id": f"http://127.0.0.1:{port}/root.json", "$ref": "other.json"},
        {"anyOf": [{"$dynamicRef": f"http://127.0.0.1:{port}/d.json"}]},
        {"$ref": "https://example.invalid/schema.json"},
    ]


def answer_for(schema: dict[str, Any]) -> str:
    """An answer that makes `schema` work hard: the evil text, or a long array of equal objects."""
    if "uniqueItems" in json.dumps(schema):
        return json.dumps([{"k": [1, 2, {"x": "y"}]} for _ in range(100_000)])
    return json.dumps(EVIL_TEXT)


COSTLY_SCHEMAS: list[dict[str, Any]] = [
    *({"type": "string", "pattern": pattern} for pattern in EVIL_PATTERNS),
    {"type": "object", "patternProperties": {EVIL_PATTERNS[0]: {}}, "additionalProperties": False},
    {"propertyNames": {"pattern": EVIL_PATTERNS[1]}},
    {"type": "array", "uniqueItems": True},
    exponential_refs(),
]
"""Valid schemas whose validation would take minutes unbounded (they must be bounded instead)."""


SECRET = "TOP-SECRET-FILE-CONTENT"
"""What the file a `file://` reference names holds (it must never come back)."""


class Listener:
    """A loopback TCP server that counts connections (a fetch of a `$ref` would be one): `async with`."""

    def __init__(self) -> None:
        """Not listening until entered."""
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def _accept(self, _reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    async def __aenter__(self) -> Listener:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
