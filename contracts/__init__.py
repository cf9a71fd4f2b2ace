"""Data models shared by workflows, activities, the worker and the client.

One pydantic model per workflow/activity/signal/query/update payload, converted
with `temporalio.contrib.pydantic.pydantic_data_converter` so payloads read as
JSON in the Temporal Web UI.
"""

from contracts.agent import AgentConfig, ModelSettings, ScriptToolCall, ScriptTurn
from contracts.llm import SCRIPTED_MODEL, LLMRequest, LLMResponse, ScriptedCall, ToolSpec, Usage
from contracts.run import (
    MAX_ITERATIONS_RESULT,
    MAX_QUERY_CHARS,
    TASK_QUEUE,
    WORKFLOW_TYPE,
    RunError,
    RunInput,
    RunResult,
    RunState,
    RunStatus,
    TerminationReason,
    ToolCallStatus,
    Trace,
    TraceEvent,
    TraceKind,
)
from contracts.signals import MAX_QUEUED_INPUTS, Ack, CancelInput, SteerInput
from contracts.tools import ResolveToolsRequest, ToolCallRequest, ToolError, ToolOutcome

__all__ = [
    "MAX_ITERATIONS_RESULT",
    "MAX_QUERY_CHARS",
    "MAX_QUEUED_INPUTS",
    "SCRIPTED_MODEL",
    "TASK_QUEUE",
    "WORKFLOW_TYPE",
    "Ack",
    "AgentConfig",
    "CancelInput",
    "LLMRequest",
    "LLMResponse",
    "ModelSettings",
    "ResolveToolsRequest",
    "RunError",
    "RunInput",
    "RunResult",
    "RunState",
    "RunStatus",
    "ScriptToolCall",
    "ScriptTurn",
    "ScriptedCall",
    "SteerInput",
    "TerminationReason",
    "ToolCallRequest",
    "ToolCallStatus",
    "ToolError",
    "ToolOutcome",
    "ToolSpec",
    "Trace",
    "TraceEvent",
    "TraceKind",
    "Usage",
]
