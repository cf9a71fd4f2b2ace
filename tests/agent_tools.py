"""Tools that the integration tests give their worker, next to the built-in calculator."""

from __future__ import annotations

import asyncio
import json
import os
import time

from pydantic import JsonValue

from activities.llm.request_transformers import RequestTransformers
from activities.tools.agent_profiles import AgentProfiles
from activities.tools.calculator import calculator
from activities.tools.tool_registry import StateEffect, ToolFailure, ToolRegistry, ToolResult, with_effects
from contracts.transform import RequestChanges, TransformInput
from testing import answer, scripted_agent

EFFECTS_FILE_ENV = "REACT_TEST_EFFECTS_FILE"
"""Where `record_effect` appends one JSON line per execution (the crash benchmark reads it)."""

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


def shout(text: str) -> str:
    """Upper-case the text (fast and pure: registered as a local tool).

    Args:
        text: what to shout.
    """
    return text.upper()


async def record_effect(label: str, idempotency_key: str, seconds: float = 0.0) -> str:
    """Make a side effect (one line in the effects file), then take `seconds` to answer.

    Every execution is recorded, retries included, with its idempotency key, so a reader
    can tell a re-execution of one tool call (same key) from a new call (new key).

    Args:
        label: names the call.
        idempotency_key: injected by the worker.
        seconds: how long to take after the side effect.
    """
    path = os.environ.get(EFFECTS_FILE_ENV)
    if not path:
        raise ToolFailure(f"record_effect needs ${EFFECTS_FILE_ENV} in the worker's environment")
    line = json.dumps({"label": label, "key": idempotency_key, "pid": os.getpid(), "at": time.time()})
    # One small O_APPEND write: whole or absent even when the process is killed right after.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
    await asyncio.sleep(seconds)
    return f"recorded {label}"


def length(text: str) -> int:
    """Count the characters of a text (what the tool received, however large).

    Args:
        text: the text to count.
    """
    return len(text)


async def change_state(op: str, path: str, value_json: str = "null", seconds: float = 0.0) -> ToolResult:
    """Ask for one agent-state effect, after `seconds` (to finish calls out of order).

    Args:
        op: set, merge or delete.
        path: the dot-separated path.
        value_json: the value, as JSON text.
        seconds: how long to take first.
    """
    await asyncio.sleep(seconds)
    effect = StateEffect.model_validate({"op": op, "path": path, "value": json.loads(value_json)})
    return with_effects(f"{op} {path}", effect)


def many_effects(count: int) -> ToolResult:
    """Ask for `count` state effects (past `MAX_EFFECTS` they are all rejected).

    Args:
        count: how many effects.
    """
    return with_effects("many", *({"op": "set", "path": f"n.k{i}", "value": i} for i in range(count)))


def peek_state(tool_context: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The agent state this call received in its context, and the rest of the context.

    Args:
        tool_context: injected by the worker.
    """
    rest = {key: value for key, value in tool_context.items() if key != "state"}
    return {"state": tool_context.get("state"), "rest": rest}


def register(registry: ToolRegistry) -> None:
    """Add the test tools (`shout` as a local tool); also `worker.py --tools tests.agent_tools`."""
    for tool in (slow, flaky, echo, huge, length, record_effect, change_state, many_effects, peek_state):
        registry.register(tool)
    registry.register(shout, local=True)


def registry_for_tests() -> ToolRegistry:
    """The calculator plus the test tools."""
    registry = ToolRegistry()
    registry.register(calculator)
    register(registry)
    return registry


RESEARCHER_ANSWER = "The researcher found: 42."


def profiles_for_tests() -> AgentProfiles:
    """The tests' agent profiles: `researcher`, a scripted agent that answers at once."""
    profiles = AgentProfiles()
    profiles.register(
        "researcher", scripted_agent(answer(RESEARCHER_ANSWER)), description="Looks things up and reports"
    )
    return profiles


def transformers_for_tests() -> RequestTransformers:
    """The tests' request transformers: `cool_down` lowers the temperature after the first call."""
    transformers = RequestTransformers()

    def cool_down(request: TransformInput) -> RequestChanges | None:
        if request.llm_calls == 0:
            return None
        settings = request.settings.model_copy(update={"temperature": 0.0})
        return RequestChanges(settings=settings, reason="later calls need no creativity")

    transformers.register("cool_down", cool_down)
    return transformers
