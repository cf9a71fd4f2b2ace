"""The agent state of a run: a JSON object tools change through effects (`contracts.effects`).

The run starts from `RunInput.agent_state` (a session passes its own). After each tool
round, `AgentStateBook.apply_round` applies the round's effects in the original
tool-call order (never the order the calls finished in), only on paths
`AgentConfig.effect_policy` allows, and reports each rejection in that call's result
(`ToolOutcome.effects_rejected`, which the model reads) and in the trace. The next
round's tools receive the refreshed snapshot in their context under `state`, a
runtime-managed key that overrides a `state` key of the user's `tool_context`.

Runs that do not use the feature (no policy, no starting state) send the user's
`tool_context` unchanged, so their activity inputs are as before.

Semantics, per effect: `set` puts the value at the path (creating missing objects on
the way), `merge` updates the object at the path with the value's keys (shallow; a
missing target becomes the value), `delete` removes the key (a missing key is no
change). An effect is rejected as `effect_forbidden` when no policy entry is a prefix
of its path, and as `invalid_effect` when it cannot be applied: an empty key in the
path, a path through a non-object, a `merge` into (or of) a non-object, or a state
over `MAX_STATE_BYTES` afterwards (the effect is then undone).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol, cast

from pydantic import JsonValue
from pydantic_core import to_json

from contracts import ToolOutcome, TraceKind
from contracts.effects import MAX_STATE_BYTES, AgentState, StateEffect
from contracts.errors import EFFECT_FORBIDDEN, INVALID_EFFECT
from conversation import ToolCall

STATE_KEY = "state"
"""The key of the tool context under which tools receive the agent state."""


class EffectEvents(Protocol):
    """Where the book records what it applied and rejected (the run's `RunRecord`)."""

    def event(
        self,
        kind: TraceKind,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Record a trace event."""
        ...


class EffectError(Exception):
    """Why an effect was not applied: `code` is `effect_forbidden` or `invalid_effect`."""

    def __init__(self, code: str, message: str) -> None:
        """Create the rejection."""
        super().__init__(message)
        self.code = code
        self.message = message


def allowed(path: str, policy: Sequence[str]) -> bool:
    """Whether `policy` lets tools change `path` (an entry equal to it, a prefix of it at a dot, or `*`)."""
    return any(entry == "*" or path == entry or path.startswith(f"{entry}.") for entry in policy)


class AgentStateBook:
    """The run's agent state, and the one place effects are applied to it."""

    def __init__(self, state: AgentState, policy: Sequence[str]) -> None:
        """Start from `state` (copied) under `policy` (an empty policy allows nothing)."""
        self._state: dict[str, Any] = copy.deepcopy(dict(state))
        self._policy = list(policy)
        self._in_use = bool(self._policy) or bool(self._state)
        self.changed = False
        self._snapshot: dict[str, JsonValue] | None = None
        self._size = len(to_json(self._state))

    @property
    def state(self) -> AgentState:
        """The current state (read only: a copy)."""
        return copy.deepcopy(self._state)

    @property
    def result(self) -> AgentState | None:
        """The state for `RunResult.agent_state`: None when no effect was applied."""
        return self.state if self.changed else None

    def tool_context(self, user: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """What a tool receives as its context: the user's, with the state under `state` (when in use)."""
        if not self._in_use:
            return user
        if self._snapshot is None:
            self._snapshot = copy.deepcopy(self._state)
        return {**user, STATE_KEY: self._snapshot}

    def apply_round(
        self, results: list[tuple[ToolCall, ToolOutcome]], events: EffectEvents
    ) -> list[tuple[ToolCall, ToolOutcome]]:
        """Apply the round's effects in call order; each outcome comes back with its rejections."""
        answered: list[tuple[ToolCall, ToolOutcome]] = []
        for call, outcome in results:
            if not outcome.effects and not outcome.effects_rejected:
                answered.append((call, outcome))
                continue
            rejected = list(outcome.effects_rejected)  # the worker's own (`invalid_effect`)
            reasons = [sentence.split(":", 1)[0] for sentence in rejected]
            applied: list[str] = []
            for effect in outcome.effects:
                try:
                    self._apply(effect)
                except EffectError as err:
                    rejected.append(f"{err.code}: {effect.op} {effect.path!r} {err.message}; not applied")
                    reasons.append(err.code)
                else:
                    applied.append(f"{effect.op} {effect.path}")
            if applied:
                self.changed = True
                self._snapshot = None
                data = {"name": call.name, "count": len(applied), "effects": applied[:16]}
                events.event("state_effects_applied", call_id=call.id, data=data)
            if rejected:
                data = {
                    "name": call.name,
                    "count": len(rejected),
                    "reasons": reasons,
                    "rejected": rejected[:8],
                }
                events.event("state_effects_rejected", call_id=call.id, data=data)
            answered.append((call, outcome.model_copy(update={"effects_rejected": rejected})))
        return answered

    # ---- one effect -------------------------------------------------------------------------

    def _apply(self, effect: StateEffect) -> None:
        """Apply one effect, or raise `EffectError` leaving the state as it was."""
        if not allowed(effect.path, self._policy):
            allowed_paths = ", ".join(self._policy) or "none"
            raise EffectError(EFFECT_FORBIDDEN, f"is not allowed by effect_policy (allowed: {allowed_paths})")
        keys = effect.path.split(".")
        if any(not key for key in keys):
            raise EffectError(INVALID_EFFECT, "has an empty key in its path")
        existing = self._walk(keys)
        if effect.op == "merge" and not isinstance(effect.value, dict):
            raise EffectError(INVALID_EFFECT, "merges a value that is not an object")
        if effect.op == "merge" and existing is not None and not isinstance(existing[0], dict):
            raise EffectError(INVALID_EFFECT, "merges into a value that is not an object")
        if effect.op == "delete" and existing is None:
            return  # nothing there: no change
        # Only an effect that could push the state past its limit needs a copy to undo it.
        growth = len(to_json(effect.value)) + len(effect.path) + 16
        backup = copy.deepcopy(self._state) if self._size + growth > MAX_STATE_BYTES else None
        parent = self._parent(keys)
        key = keys[-1]
        if effect.op == "set":
            parent[key] = copy.deepcopy(effect.value)
        elif effect.op == "merge":
            old = parent.get(key)
            target = dict(cast(dict[str, Any], old)) if isinstance(old, dict) else {}
            target.update(copy.deepcopy(cast(dict[str, Any], effect.value)))
            parent[key] = target
        else:
            parent.pop(key, None)
        size = len(to_json(self._state))
        if size > MAX_STATE_BYTES:
            assert backup is not None
            self._state = backup
            raise EffectError(
                INVALID_EFFECT, f"would make the state {size} bytes of JSON (limit {MAX_STATE_BYTES})"
            )
        self._size = size

    def _walk(self, keys: list[str]) -> tuple[object] | None:
        """The value at the path (in a 1-tuple), None when a key is missing.

        Raises:
            EffectError: `invalid_effect`, when the path goes through a non-object.
        """
        node: object = self._state
        for depth, key in enumerate(keys):
            if not isinstance(node, dict):
                where = ".".join(keys[:depth])
                raise EffectError(INVALID_EFFECT, f"goes through {where!r}, which is not an object")
            obj = cast(dict[str, object], node)
            if key not in obj:
                return None
            node = obj[key]
        return (node,)

    def _parent(self, keys: list[str]) -> dict[str, Any]:
        """The object holding the path's last key, creating missing objects (`_walk` checked the way)."""
        node: dict[str, Any] = self._state
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        return node
