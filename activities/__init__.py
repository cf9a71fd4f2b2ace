"""Activities of Durable ReAct: the LLM call and the tool calls, run by the worker.

Workflow code imports none of this package: activity names and Web UI summaries live in
`contracts.activities`. The litellm-backed
names (`llm_call`, `register_scripted_provider`) load lazily, on first access, so
that import stays cheap and free of litellm.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# Set before anything imports litellm (every submodule import runs this file first):
# otherwise litellm fetches its model cost map from the internet at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from activities.calculator import calculator
from activities.tool_registry import (
    InvalidArgumentsError,
    ToolFailure,
    ToolRegistry,
    UnknownToolError,
    default_registry,
)
from activities.tools import ToolActivities
from contracts.activities import (
    LLM_ACTIVITY,
    RESOLVE_TOOLS_ACTIVITY,
    TOOL_ACTIVITY,
    activity_summary,
    tool_activity_summary,
)

if TYPE_CHECKING:
    from activities.llm import LLMActivities
    from activities.scripted import register_scripted_provider

# litellm-backed names, imported on first access. (`calculator` is imported eagerly:
# a lazy name equal to a submodule's name would be shadowed by the submodule.)
_LAZY = {"LLMActivities": "activities.llm", "register_scripted_provider": "activities.scripted"}

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
    "register_scripted_provider",
    "tool_activity_summary",
]


def __getattr__(name: str) -> Any:
    """Import the heavy public names on first access (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
