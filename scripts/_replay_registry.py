"""The registry of the scenarios `scripts/record_histories.py` records, and their small helpers.

A scenario is an `async def name(lab: Lab) -> list[str]` registered with
`@scenario(<feature>, ...)`: it drives real workflows with plain JSON and returns the ids
of those to record (a session's runs included). The features are the names
`tests.replay.test_replay.features_of` gives (`activity:<type>`, `update:<name>`, ...). The
scenarios register in import order (`scripts.replay_scenarios`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from scripts._replay_lab import Lab

Scenario = Callable[[Lab], Awaitable[list[str]]]
"""Drives real workflows and returns the ids of those to record (a session's runs included)."""
SCENARIOS: dict[str, Scenario] = {}
REQUIRED: dict[str, set[str]] = {}
"""What each scenario's histories must show (as `tests.replay.test_replay.features_of` names it)."""


def scenario(*required: str) -> Callable[[Scenario], Scenario]:
    """Register a scenario, in order, with what its histories must show."""

    def register(function: Scenario) -> Scenario:
        SCENARIOS[function.__name__] = function
        REQUIRED[function.__name__] = set(required)
        return function

    return register


def calc(expression: str, call_id: str) -> dict[str, Any]:
    """A scripted calculator call."""
    return {"name": "calculator", "arguments": {"expression": expression}, "id": call_id}


def slow(seconds: float, call_id: str) -> dict[str, Any]:
    """A scripted turn calling the `slow` tool (it sleeps `seconds`)."""
    return {"tool_calls": [{"name": "slow", "arguments": {"seconds": seconds}, "id": call_id}]}


def expect(answer: Any, field: str, value: str) -> None:
    """Fail the recording unless `answer[field]` is `value`."""
    if answer[field] != value:
        raise RuntimeError(f"expected {field} {value!r}, got {answer!r}")
