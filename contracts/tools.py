"""Input and output of the tool activities."""

from __future__ import annotations

from pydantic import BaseModel, JsonValue

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


class ToolOutcome(BaseModel):
    """A tool call's result or failure; never raised into the run."""

    ok: bool
    result: JsonValue = None
    error: ToolError | None = None
    attempts: int = 1

    def for_model(self) -> dict[str, JsonValue]:
        """The envelope the model receives: `{"ok": true, "result": ...}` or `{"ok": false, "error": ...}`."""
        if self.ok:
            return {"ok": True, "result": self.result}
        assert self.error is not None
        return {"ok": False, "error": self.error.model_dump(mode="json")}


class ResolveToolsRequest(BaseModel):
    """Names of the tools a run wants; the worker answers with their specs."""

    names: list[str]
