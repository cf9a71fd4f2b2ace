"""Tool state effects: an agent `state` (a JSON object) that tools change through effects.

A tool may return effects alongside its result (`ToolOutcome.effects`). After the round,
the run applies the ones `AgentConfig.effect_policy` allows, in the original tool-call
order, and the next round's tools see the refreshed snapshot in their context under
`state`. Rejected effects are reported to the model (in the tool's result) and in the
trace. A session keeps the state across requests (its `agent_state` query).

Paths are dot-separated keys (`"cart.items"`); `effect_policy` lists path prefixes
tools may change (`"cart"` allows `"cart"` and `"cart.items"`; `"*"` allows every path).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, JsonValue, RootModel, StringConstraints

MAX_STATE_BYTES = 256 * 1024
"""The JSON size of an agent's state; an effect that would grow it past this is rejected."""
MAX_EFFECTS = 64
"""Effects one tool call may return."""

StatePath = Annotated[str, StringConstraints(min_length=1, max_length=256)]
AgentState = dict[str, JsonValue]


class StateEffect(BaseModel):
    """One change of the agent state: `set` a value, `merge` an object into one, `delete` a key."""

    op: Literal["set", "merge", "delete"]
    path: StatePath
    value: JsonValue = None


class EffectRejection(BaseModel):
    """An effect the run did not apply, and why (`effect_forbidden`, `invalid_effect`, ...)."""

    call_id: str
    effect: StateEffect
    reason: str
    message: str


class AgentStateValue(RootModel[AgentState]):
    """Answer of a session's `agent_state` query: the agent state itself (a JSON object)."""
