"""Input and output of the tool activities."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contracts.effects import MAX_EFFECTS, StateEffect
from contracts.llm import Usage
from contracts.omit import IS_EMPTY, IS_NONE
from conversation import ToolCall
from conversation.messages import OmitDefaults


class ToolError(BaseModel):
    """Why a tool call failed, as the model receives it."""

    type: str
    message: str
    details: JsonValue = None
    retryable: bool = False


class ToolCallRequest(OmitDefaults):
    """One tool call to execute, as the model requested it (the run is the activity's workflow)."""

    call: ToolCall
    tool_context: dict[str, JsonValue] = {}


MAX_RESULT_CHARS = 64 * 1024
"""Longest text of a result sent back to the model (a tool's JSON, an agent's answer); cut, never refused."""


def cut_result(text: str) -> str:
    """`text` cut at `MAX_RESULT_CHARS` with a marker saying how much was left out (or unchanged)."""
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return f"{text[:MAX_RESULT_CHARS]}…[truncated: {len(text) - MAX_RESULT_CHARS} more characters]"


class ToolOutcome(BaseModel):
    """A tool call's result or failure; never raised into the run.

    `note` (an approval's reason or edited arguments) is shown to the model with the
    result. `usage` is an agent tool's usage (its child run's), which the caller adds
    to its own; `agent_workflow_id` names that child run. `effects` are the agent-state
    changes the tool asks for (`contracts.effects`); the run reports the ones it
    rejected to the model in `effects_rejected`.
    """

    ok: bool
    result: JsonValue = None
    error: ToolError | None = None
    attempts: int = 1
    # Left out of the JSON while unset, so a plain tool call's result is as small as before.
    note: str | None = Field(default=None, exclude_if=IS_NONE)
    usage: Usage | None = Field(default=None, exclude_if=IS_NONE)
    agent_workflow_id: str | None = Field(default=None, exclude_if=IS_NONE)
    effects: Annotated[list[StateEffect], Field(max_length=MAX_EFFECTS, exclude_if=IS_EMPTY)] = []
    effects_rejected: list[str] = Field(default_factory=list[str], exclude_if=IS_EMPTY)

    def for_model(self) -> dict[str, JsonValue]:
        """The envelope the model receives: `{"ok": true, "result": ...}` or `{"ok": false, "error": ...}`."""
        envelope: dict[str, JsonValue]
        if self.ok:
            envelope = {"ok": True, "result": self.result}
        else:
            assert self.error is not None
            envelope = {"ok": False, "error": self.error.model_dump(mode="json")}
        if self.note is not None:
            envelope["note"] = self.note
        if self.effects_rejected:
            envelope["effects_rejected"] = list[JsonValue](self.effects_rejected)
        return envelope


class ResolveToolsRequest(BaseModel):
    """Names of the tools a run wants; the worker answers with their specs."""

    names: list[str]


class RecordedToolResult(BaseModel):
    """A tool result a run answers with instead of calling the tool (`RunInput.recorded_tool_results`).

    A call takes the first unused recorded result of its tool whose `arguments` equal the call's
    (parsed JSON); else the first unused one of its tool with no `arguments`.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, JsonValue] | None = None
    result: JsonValue = None
    ok: bool = True
    error: str | None = None
