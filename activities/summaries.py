"""Workflow-safe facts about the activities: their names (from `activities.names`) and Web UI summaries.

Workflow code imports this module (through `imports_passed_through`), so it must
stay pure and light: no litellm, no I/O, nothing but the contracts.
"""

from __future__ import annotations

from activities.names import LLM_ACTIVITY, RESOLVE_TOOLS_ACTIVITY, TOOL_ACTIVITY
from contracts.llm import LLMRequest
from contracts.tools import ToolCallRequest

__all__ = [
    "LLM_ACTIVITY",
    "RESOLVE_TOOLS_ACTIVITY",
    "TOOL_ACTIVITY",
    "activity_summary",
    "tool_activity_summary",
]


def activity_summary(request: LLMRequest) -> str:
    """The Web UI summary of an LLM call: model and iteration, e.g. `llm gpt-4o-mini #3`.

    Lets an operator scan a run's event history without opening each payload.
    """
    return f"llm {request.model} #{request.iteration}"


def tool_activity_summary(request: ToolCallRequest) -> str:
    """The Web UI summary of a tool call: tool name and call id, e.g. `tool calculator call_0_0`."""
    return f"tool {request.call.name} {request.call.id}"
