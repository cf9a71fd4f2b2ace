"""Tools that the integration tests give their worker, next to the built-in calculator."""

from __future__ import annotations

import asyncio

from activities.calculator import calculator
from activities.tool_registry import ToolRegistry

_failed_once: set[str] = set()


async def slow(seconds: float, label: str = "") -> str:
    """Sleep, then answer.

    Args:
        seconds: how long to take.
        label: echoed back, to tell calls apart.
    """
    await asyncio.sleep(seconds)
    return f"slept {seconds}s {label}".strip()


def flaky(key: str) -> str:
    """Fail the first call for each key, succeed afterwards.

    Args:
        key: identifies the call across retries.
    """
    if key not in _failed_once:
        _failed_once.add(key)
        raise ConnectionError(f"transient failure for {key}")
    return f"ok {key}"


def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo.
    """
    return text


def huge(size: int) -> str:
    """Return a string of `size` characters.

    Args:
        size: how many characters.
    """
    return "x" * size


def registry_for_tests() -> ToolRegistry:
    """The calculator plus the test tools."""
    registry = ToolRegistry()
    for tool in (calculator, slow, flaky, echo, huge):
        registry.register(tool)
    return registry
