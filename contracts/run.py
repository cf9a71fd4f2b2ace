"""Input, result, state and trace of one ReAct run (the `ReActRun` workflow)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, model_validator

from contracts import v1
from contracts.agent import AgentConfig, QueryText, UsageLimits
from contracts.approval import PendingApproval
from contracts.bounds import Id, Refs, json_size_at_most
from contracts.effects import MAX_STATE_BYTES, AgentState
from contracts.limits import MAX_AGENT_DEPTH, MAX_AGENT_RUNS, MAX_CONTEXT_BYTES
from contracts.llm import Usage
from contracts.omit import IS_EMPTY, IS_NONE
from contracts.tools import RecordedToolResult
from contracts.webhooks import WebhookTarget
from conversation import DEFAULT_CONTEXT_REF, Context, ContextOpPayload, Entry, MessageEntry
from conversation.attachments import Attachments

TASK_QUEUE = "react-agent"
WORKFLOW_TYPE = "ReActRun"
MAX_ITERATIONS_RESULT = "Maximum iterations reached without a final answer."

RunStatus = Literal["running", "completed", "failed", "cancelled"]
TerminationReason = Literal["final_answer", "max_iterations", "error", "cancelled"]


class RunInput(BaseModel):
    """Start a run: the user's query, the agent config, optionally the conversation so far.

    `context` is the lane's context to continue from (`context_ref` names the lane);
    it is the run's starting point, not part of what the run appends. `agent_depth`
    and `agent_depth_limit` are set by a run that calls this one as an agent (a tool):
    how deep it is, and the caller's bound (a child never raises it); `agent_runs_limit`
    is the share of the caller's `max_agent_runs` this run's own agents may start. `agent_state` is
    the agent state tools start from (a session passes its own), `session_usage` the
    session's usage before this request (for `usage_limits.per_session`); `query_refs` are
    kept with the query's user message (a session passes its ask's `refs`), and so are
    `query_attachments` (its ask's `attachments`); `webhook` is where
    an `approval.waiting` webhook goes when a tool call starts waiting for approval.
    `agent_version` is the version of an agent made at run time whose config this is (a session
    passes its ask's): the request's record keeps it, and the run's summary names it.
    `recorded_tool_results` answer tool calls instead of the tools (an evaluation's case replays a
    recorded request's facts: `workflows.run.tool_step`); left out of the JSON while empty.
    """

    query: QueryText
    request_id: Id | None = None
    config: AgentConfig
    context: Annotated[Context, json_size_at_most(MAX_CONTEXT_BYTES, "context")] | None = None
    context_ref: Id = DEFAULT_CONTEXT_REF
    agent_depth: Annotated[int, Field(ge=0, le=MAX_AGENT_DEPTH)] = 0
    agent_depth_limit: Annotated[int, Field(ge=0, le=MAX_AGENT_DEPTH)] | None = None
    agent_runs_limit: Annotated[int, Field(ge=0, le=MAX_AGENT_RUNS)] | None = None
    agent_state: Annotated[AgentState, json_size_at_most(MAX_STATE_BYTES, "agent_state")] = {}
    session_usage: Usage | None = None
    query_refs: Refs = {}
    query_attachments: Attachments = []
    webhook: WebhookTarget | None = None
    agent_version: Annotated[int, Field(ge=1)] | None = None
    recorded_tool_results: Annotated[
        list[RecordedToolResult], Field(max_length=1_000, exclude_if=IS_EMPTY)
    ] = []


class RunError(BaseModel):
    """Why a run failed: `type` is a code of `contracts.errors`."""

    type: str
    message: str


class Outcome(BaseModel):
    """Where a run stands or how it ended; one model for a run's state, its result and a session's record.

    `answer_seq` is the seq of the final answer's entry in the owner's thread (the
    run's thread in `RunState`/`RunResult`, the session's thread in a `RequestRecord`).
    """

    status: RunStatus = "running"
    termination_reason: TerminationReason | None = None
    error: RunError | None = None
    usage: Usage = Usage()
    iterations: int = 0
    answer_seq: int | None = None


class ToolCallStatus(BaseModel):
    """A tool call of the current round, for the `state` query.

    `agent_workflow_id` is the child run's workflow id when the tool is an agent.
    """

    id: str
    name: str
    status: Literal["awaiting_approval", "running", "ok", "error", "cancelled"] = "running"
    attempts: int = 0
    started_at: datetime
    duration_ms: int | None = None
    agent_workflow_id: str | None = None


class RunResult(BaseModel):
    """The outcome of a run; returned for completed, failed and cancelled runs alike.

    `entries` are the entries this run appended to its thread, each once (its messages,
    then the applied deferred context op, if any); `first_seq` is the seq of the first
    of them. `answer` is the final answer's text (None when the run ended without one),
    so any reader of the JSON (the Temporal CLI, the Web UI, a service in another
    language) finds it without index arithmetic; it is also the entry at
    `outcome.answer_seq`. The run's context and trace are not repeated here: project the
    entries, or query the run (`context`, `trace`). `output` is the parsed final answer
    when the config asks for structured output; `agent_state` the agent state after the
    run's tool effects (None when no effect was applied).
    """

    request_id: str
    run_id: str
    answer: str | None = None
    output: JsonValue = Field(default=None, exclude_if=IS_NONE)
    agent_state: AgentState | None = Field(default=None, exclude_if=IS_NONE)
    outcome: Outcome
    entries: list[Entry] = []
    first_seq: int = 0
    context_ref: str = DEFAULT_CONTEXT_REF
    dropped_input_ids: list[str] = []

    @property
    def status(self) -> RunStatus:
        """The outcome's status."""
        return self.outcome.status

    @property
    def result(self) -> str | None:
        """The final answer's text (`MAX_ITERATIONS_RESULT` when the run ran out of iterations)."""
        if self.answer is not None:
            return self.answer
        return answer_text(self.entries, self.first_seq, self.outcome)

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Read results of version-1 runs, which replayed v1 session histories decode."""
        return v1.run_result(data)

    @model_validator(mode="after")
    def _answer_from_entries(self) -> RunResult:
        """`answer` defaults to the text of the entry at `outcome.answer_seq` (one rule for all)."""
        if self.answer is None:
            self.answer = final_answer(self.entries, self.first_seq, self.outcome)
        return self


def final_answer(entries: list[Entry], first_seq: int, outcome: Outcome) -> str | None:
    """The text of the final answer's entry among `entries` (whose first has seq `first_seq`), if any."""
    index = -1 if outcome.answer_seq is None else outcome.answer_seq - first_seq
    entry = entries[index] if 0 <= index < len(entries) else None
    return entry.payload.content if isinstance(entry, MessageEntry) else None


def answer_text(entries: list[Entry], first_seq: int, outcome: Outcome) -> str | None:
    """The final answer's text, or `MAX_ITERATIONS_RESULT` when the run ran out of iterations."""
    answer = final_answer(entries, first_seq, outcome)
    if answer is None and outcome.termination_reason == "max_iterations":
        return MAX_ITERATIONS_RESULT
    return answer


class RunState(BaseModel):
    """Answer of the `state` query."""

    request_id: str
    run_id: str
    outcome: Outcome
    iteration: int
    pending_tool_calls: list[ToolCallStatus] = []
    queued_inputs: int = 0
    active_context_ref: str = DEFAULT_CONTEXT_REF
    pending_context_op: ContextOpPayload | None = None
    thread_length: int = 0
    pending_approvals: list[PendingApproval] = []
    usage_limits: UsageLimits | None = None
    agent_state: AgentState = {}


TraceKind = Literal[
    "request_started",
    "memory_recalled",
    "llm_started",
    "llm_completed",
    "llm_interrupted",
    "tool_started",
    "tool_completed",
    "tool_round_interrupted",
    "approval_requested",
    "approval_decided",
    "agent_started",
    "output_parsed",
    "output_invalid",
    "request_transformed",
    "state_effects_applied",
    "state_effects_rejected",
    "context_overflow_recovered",
    "input_injected",
    "input_rejected",
    "context_op_deferred",
    "context_op_applied",
    "context_op_rejected",
    "request_completed",
    "request_failed",
    "request_cancelled",
]
TERMINAL_KINDS: frozenset[TraceKind] = frozenset({"request_completed", "request_failed", "request_cancelled"})
"""A run's last trace event: one of these ends every run."""
CALL_END_KINDS: frozenset[TraceKind] = frozenset({"llm_completed", "llm_interrupted"})
"""An LLM call's end: its message is in the run's thread (its deltas may leave the stream's log)."""


class TraceEvent(BaseModel):
    """One event of a run's trace (`data` holds short previews, never whole payloads)."""

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
    """Answer of the `trace` query.

    Lifecycle events (`request_*`, `llm_*`, `tool_*`, ...) are always recorded up to the
    cap; past it the oldest middle ones are dropped (`truncated`, `dropped`), never the
    newest. Rejections (`input_rejected`, `context_op_rejected`) are counted in
    `rejections` and only the first few are recorded, so a flood cannot crowd out the rest.
    """

    events: list[TraceEvent] = []
    truncated: bool = False
    dropped: int = 0
    rejections: dict[str, int] = Field(default_factory=dict[str, int])
