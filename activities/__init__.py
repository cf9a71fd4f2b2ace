"""Activities of Durable ReAct: the LLM call and the tool calls, run by the worker.

Workflow code imports none of this package: activity names and Web UI summaries live in
`contracts.activities`. Importing it does not import litellm: only `activities.llm._litellm`
does, loaded on the first LLM call (or by the worker's background warm-up). The
litellm-backed names below (`policy_for_model`, `register_scripted_provider`) load it
on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from activities.llm.llm_call import LLMActivities
from activities.tools.calculator import calculator
from activities.tools.tool_calls import ToolActivities
from activities.tools.tool_registry import (
    InvalidArgumentsError,
    ToolFailure,
    ToolRegistry,
    UnknownToolError,
    default_registry,
)
from contracts.activities import (
    LLM_ACTIVITY,
    RESOLVE_TOOLS_ACTIVITY,
    TOOL_ACTIVITY,
    activity_summary,
    tool_activity_summary,
)

if TYPE_CHECKING:
    from activities.llm._litellm import policy_for_model
    from activities.llm.models.scripted import register_scripted_provider

# litellm-backed names, imported on first access. (`calculator` is imported eagerly:
# a lazy name equal to a submodule's name would be shadowed by the submodule.)
_LAZY = {
    "policy_for_model": "activities.llm._litellm",
    "register_scripted_provider": "activities.llm.models.scripted",
}

__all__ = [
    "LLM_ACTIVITY",
    "RESOLVE_TOOLS_ACTIVITY",
    "TOOL_ACTIVITY",
    "InvalidArgumentsError",
    "LLMActivities",
    "ToolActivities",
    "ToolFailure",
    "ToolRegistry",
    "UnknownToolError",
    "activity_summary",
    "calculator",
    "default_registry",
    "policy_for_model",
    "register_scripted_provider",
    "tool_activity_summary",
]


def __getattr__(name: str) -> Any:
    """Import the litellm-backed public names on first access (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
