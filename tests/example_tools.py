"""The tools the registry and tool-activity tests register: typed, async, failing, big, not JSON."""

from __future__ import annotations

import threading
from typing import Any, Literal

from pydantic import BaseModel, JsonValue

from activities import ToolFailure, ToolRegistry


class Point(BaseModel):
    x: int
    y: int


def search(
    query: str,
    limit: int = 5,
    mode: Literal["fast", "deep"] = "fast",
    tags: list[str] | None = None,
    origin: Point | None = None,
    *,
    tool_context: dict[str, JsonValue],
) -> dict[str, Any]:
    """Search the knowledge base for documents.

    Longer explanation that is not part of the summary.

    Args:
        query: What to look for. Plain words work best,
            no boolean syntax.
        limit (int): How many results to return.
        mode: Search strategy.
        tags: Only documents with these tags.
        origin: Where to start.
        tool_context: Injected by the worker, never seen by the model.

    Returns:
        The matches.
    """
    return {"query": query, "limit": limit, "mode": mode, "tags": tags, "origin": origin, "ctx": tool_context}


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def where() -> str:
    """The name of the thread the tool runs in."""
    return threading.current_thread().name


def fails(kind: str) -> str:
    """Fail in the requested way.

    Args:
        kind: `expected`, `typed`, `retryable` or `crash`.
    """
    if kind == "expected":
        raise ToolFailure("no such city", details={"city": "Atlantis"})
    if kind == "typed":
        raise ToolFailure("quota used up", type="quota_exceeded")
    if kind == "retryable":
        raise ToolFailure("backend busy", retryable=True)
    raise RuntimeError("tool crashed")


def big(size: int) -> str:
    """A string of `size` characters.

    Args:
        size: How long.
    """
    return "x" * size


def not_json() -> object:
    """Return something that is not JSON."""
    return object()


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for fn in (search, add, where, fails, big, not_json):
        reg.register(fn)
    return reg
