"""Input, result, state and trace of one ReAct run (the `ReActRun` workflow)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, JsonValue

from contracts.agent import AgentConfig
from contracts.llm import Usage
from conversation import DEFAULT_CONTEXT_REF, Context, ContextOpPayload, Entry

TASK_QUEUE = "react-agent"
WORKFLOW_TYPE = "ReActRun"
MAX_QUERY_CHARS = 100_000
MAX_ITERATIONS_RESULT = "Maximum iterations reached without a final answer."

RunStatus = Literal["running", "completed", "failed", "cancelled"]
TerminationReason = Literal["final_answer", "max_iterations", "error", "cancelled"]


class RunInput(BaseModel):
    """Start a run: the user's query, the agent config, optionally the conversation so far.

    `context` is the lane's context to continue from (`context_ref` names the lane);
    it is the run's starting point, not part of what the run appends.
    """

    query: str
    request_id: str | None = None
    config: AgentConfig
    context: Context | None = None
    context_ref: str = DEFAULT_CONTEXT_REF


class RunError(BaseModel):
    """Why a run failed."""

    type: str
    message: str


class ToolCallStatus(BaseModel):
    """A tool call of the current round, for the `state` query."""

    id: str
    name: str
    arguments: str
    status: Literal["running", "ok", "error", "cancelled"] = "running"
    attempts: int = 0
    started_at: datetime
    duration_ms: int | None = None


class RunResult(BaseModel):
    """The outcome of a run; returned for completed, failed and cancelled runs alike.

    `thread` holds the entries this run appended (its messages, then the applied
    deferred context op, if any); `context` is the final materialized context of
    lane `context_ref`; `trace` is the run's trace (a session keeps it after the run).
    """

    request_id: str
    run_id: str
    status: RunStatus
    result: str | None = None
    termination_reason: TerminationReason | None = None
    error: RunError | None = None
    usage: Usage = Usage()
    iterations: int = 0
    thread: list[Entry] = []
    context: Context = Context()
    context_ref: str = DEFAULT_CONTEXT_REF
    trace: Trace | None = None


class RunState(BaseModel):
    """Answer of the `state` query."""

    request_id: str
    run_id: str
    status: RunStatus
    iteration: int
    pending_tool_calls: list[ToolCallStatus] = []
    usage: Usage = Usage()
    result: str | None = None
    error: RunError | None = None
    termination_reason: TerminationReason | None = None
    queued_inputs: int = 0
    active_context_ref: str = DEFAULT_CONTEXT_REF
    pending_context_op: ContextOpPayload | None = None


TraceKind = Literal[
    "request_started",
    "llm_started",
    "llm_completed",
    "tool_started",
    "tool_completed",
    "input_injected",
    "input_rejected",
    "context_op_deferred",
    "context_op_applied",
    "context_op_rejected",
    "request_completed",
    "request_failed",
    "request_cancelled",
]


class TraceEvent(BaseModel):
    """One event of a run's trace."""

    seq: int
    at: datetime
    kind: TraceKind
    iteration: int
    request_id: str
    run_id: str
    call_id: str | None = None
    input_id: str | None = None
    op_id: str | None = None
    data: dict[str, JsonValue] = {}


class Trace(BaseModel):
    """Answer of the `trace` query: at most `TRACE_CAP` events, then `truncated`."""

    events: list[TraceEvent] = []
    truncated: bool = False


RunResult.model_rebuild()
