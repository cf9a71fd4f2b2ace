"""Activity names and their Web UI summaries: the contract between workflows and the worker.

Workflow code imports this module, so it stays pure and light: no litellm, no I/O.
"""

from __future__ import annotations

from typing import Final

from contracts.llm import LLMRequest
from contracts.tools import ToolCallRequest

LLM_ACTIVITY: Final = "llm_call"
TOOL_ACTIVITY: Final = "run_tool"
RESOLVE_TOOLS_ACTIVITY: Final = "resolve_tools"
EXPORT_SNAPSHOT_ACTIVITY: Final = "export_snapshot"
RESTORE_SNAPSHOT_ACTIVITY: Final = "restore_snapshot"
SUMMARIZE_ACTIVITY: Final = "summarize"
COUNT_TOKENS_ACTIVITY: Final = "count_tokens"
ARCHIVE_SEGMENT_ACTIVITY: Final = "archive_segment"
READ_SEGMENT_ACTIVITY: Final = "read_segment"


def activity_summary(request: LLMRequest) -> str:
    """The Web UI summary of an LLM call: model and iteration, e.g. `llm gpt-4o-mini #3`.

    Lets an operator scan a run's event history without opening each payload.
    """
    return f"llm {request.model} #{request.iteration}"


def tool_activity_summary(request: ToolCallRequest) -> str:
    """The Web UI summary of a tool call: tool name and call id, e.g. `tool calculator call_0_0`."""
    return f"tool {request.call.name} {request.call.id}"
