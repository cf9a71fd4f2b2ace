"""Data models shared by workflows, activities, the worker and the client.

One pydantic model per workflow/activity/signal/query/update payload, converted
with `temporalio.contrib.pydantic.pydantic_data_converter` so payloads read as
JSON in the Temporal Web UI. Every public input has named size limits
(`contracts.limits`) and bounded numbers; `contracts.errors` is the error vocabulary.
"""

from contracts.agent import AgentConfig, ModelSettings, ScriptToolCall, ScriptTurn
from contracts.limits import MAX_QUERY_CHARS, MAX_QUEUED_INPUTS
from contracts.llm import (
    SCRIPTED_MODEL,
    LLMRequest,
    LLMResponse,
    MessageRef,
    PrefixRef,
    ScriptedCall,
    ToolSpec,
    Usage,
)
from contracts.run import (
    MAX_ITERATIONS_RESULT,
    TASK_QUEUE,
    WORKFLOW_TYPE,
    Outcome,
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
from contracts.signals import Ack, CancelInput, ControlAck, InputKind, SteerInput
from contracts.thread import Segment, SegmentRef, ThreadPage, ThreadQuery
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
    "ControlAck",
    "InputKind",
    "LLMRequest",
    "LLMResponse",
    "MessageRef",
    "ModelSettings",
    "Outcome",
    "PrefixRef",
    "ResolveToolsRequest",
    "RunError",
    "RunInput",
    "RunResult",
    "RunState",
    "RunStatus",
    "ScriptToolCall",
    "ScriptTurn",
    "ScriptedCall",
    "Segment",
    "SegmentRef",
    "SteerInput",
    "TerminationReason",
    "ThreadPage",
    "ThreadQuery",
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
