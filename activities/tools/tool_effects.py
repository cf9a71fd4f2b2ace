"""A tool's state effects: how a tool returns them, and how `run_tool` bounds them.

A tool changes the agent state (`contracts.effects`) by returning its value wrapped
with effects:

    from activities.tools.tool_registry import StateEffect, with_effects

    def add_to_cart(item: str) -> ToolResult:
        return with_effects(f"added {item}", StateEffect(op="merge", path="cart", value={item: 1}))

The run applies them after the round, in the original call order, where
`AgentConfig.effect_policy` allows (see `workflows.run.agent_state`). Here, on the worker,
effects that cannot be sent are turned into `invalid_effect` rejections (the model
reads them with the result) rather than failing the call: more than `MAX_EFFECTS`
(none is sent), an effect that is not a `StateEffect`, or a value larger than
`MAX_STATE_BYTES` of JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from contracts.effects import MAX_EFFECTS, MAX_STATE_BYTES, StateEffect
from contracts.errors import INVALID_EFFECT

__all__ = ["StateEffect", "ToolResult", "split_result", "with_effects"]


@dataclass(frozen=True)
class ToolResult:
    """A tool's value (what the model reads) and the state effects it asks for.

    Attributes:
        value: the result, any JSON-serializable value.
        effects: `StateEffect`s, or mappings of the same fields (`{"op": "set", "path": ..., "value": ...}`).
    """

    value: Any
    effects: Sequence[StateEffect | Mapping[str, Any]] = field(default_factory=list[StateEffect])


def with_effects(value: Any, *effects: StateEffect | Mapping[str, Any]) -> ToolResult:
    """`value` as the tool's result, with `effects` on the agent state."""
    return ToolResult(value, list(effects))


def split_result(result: Any) -> tuple[Any, list[StateEffect], list[str]]:
    """A tool's return value as (result, effects to send, rejection sentences).

    A plain value has no effects. Too many effects are all rejected in one sentence;
    a malformed or oversized effect is rejected alone.
    """
    if not isinstance(result, ToolResult):
        return result, [], []
    raw = list(result.effects)
    if len(raw) > MAX_EFFECTS:
        sentence = (
            f"{INVALID_EFFECT}: the tool returned {len(raw)} state effects, at most {MAX_EFFECTS} "
            "are allowed; none was applied"
        )
        return result.value, [], [sentence]
    effects: list[StateEffect] = []
    rejected: list[str] = []
    for index, item in enumerate(raw):
        problem, effect = _checked(item)
        if effect is not None:
            effects.append(effect)
        else:
            rejected.append(f"{INVALID_EFFECT}: state effect #{index + 1} {problem}; it was not applied")
    return result.value, effects, rejected


def _checked(item: StateEffect | Mapping[str, Any]) -> tuple[str, StateEffect | None]:
    """The effect, or why it cannot be sent."""
    try:
        effect = item if isinstance(item, StateEffect) else StateEffect.model_validate(dict(item))
        size = len(to_json(effect.value))
    except PydanticSerializationError:
        return "has a value that is not JSON", None
    except (ValidationError, TypeError, ValueError) as exc:
        return f"is malformed ({str(exc).splitlines()[0][:200]})", None
    if size > MAX_STATE_BYTES:
        return f"on {effect.path!r} has a {size}-byte value (the state's limit is {MAX_STATE_BYTES})", None
    return "", effect
