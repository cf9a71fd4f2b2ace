"""Payloads of the `AgentSession` workflow: a conversation that outlives every run."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, JsonValue

from contracts.agent import AgentConfig, ModelSettings
from contracts.llm import Usage
from contracts.run import RunError, RunStatus, TerminationReason, Trace
from conversation import DEFAULT_CONTEXT_REF, Context, ConversationState
from conversation.policy import ContextPolicy

SESSION_WORKFLOW_TYPE = "AgentSession"
MAX_KEPT_REQUESTS = 100
MAX_KEPT_TRACES = 20

SessionState = Literal["idle", "running"]


class RequestRecord(BaseModel):
    """One ask and what became of it (the session keeps the last `MAX_KEPT_REQUESTS`)."""

    request_id: str
    query: str
    status: RunStatus
    run_workflow_id: str
    result: str | None = None
    error: RunError | None = None
    termination_reason: TerminationReason | None = None
    usage: Usage = Usage()
    iterations: int = 0
    started_at: datetime
    finished_at: datetime | None = None


class SessionCarry(BaseModel):
    """Everything a session hands to its next run when it continues as new."""

    conversation: ConversationState
    config: AgentConfig
    requests: list[RequestRecord] = []
    traces: dict[str, Trace] = {}
    runs_started: int = 0


class SessionInput(BaseModel):
    """Start a session: which agent, its config, optionally a snapshot token to restore."""

    agent_id: str
    config: AgentConfig
    context_policy: ContextPolicy | None = None
    snapshot: str | None = None
    carry: SessionCarry | None = None


class AskInput(BaseModel):
    """A user turn. `overrides` replaces fields of the agent config for this request only.

    The context policy of a request is, highest first: this ask's, the session's, the
    agent config's, the default.
    """

    query: str
    request_id: str | None = None
    overrides: dict[str, JsonValue] = {}
    context_policy: ContextPolicy | None = None


class AskAccepted(BaseModel):
    """The ask was accepted and its run started."""

    request_id: str
    run_workflow_id: str


class RequestRef(BaseModel):
    """Names one request (for `await_result` and the `trace` query)."""

    request_id: str


class SessionStatus(BaseModel):
    """Answer of the `status` query."""

    agent_id: str
    state: SessionState
    active_request_id: str | None = None
    active_run_workflow_id: str | None = None
    config: AgentConfig
    thread_length: int
    active_context_ref: str = DEFAULT_CONTEXT_REF
    pending_context_op_id: str | None = None
    requests_kept: int = 0


class ThreadQuery(BaseModel):
    """The `thread` query's filter: entries with seq >= since_seq."""

    since_seq: int = 0


class ContextQuery(BaseModel):
    """The `context` query's lane (default: the active one)."""

    context_ref: str | None = None


class ExportInput(BaseModel):
    """Export the conversation: a lane (default: the active one) and an optional lifetime."""

    context_ref: str | None = None
    ttl_s: float | None = None


class ExportResult(BaseModel):
    """A signed, portable snapshot token of the conversation."""

    token: str
    expires_at: datetime | None = None


class SystemPromptInput(BaseModel):
    """`set_system_prompt`: the base prompt for the next run (None clears it)."""

    system_prompt: str | None = None


class ToolNameInput(BaseModel):
    """`register_tool` / `unregister_tool`."""

    name: str


class ToolContextInput(BaseModel):
    """`set_tool_context`: what tools that take a `tool_context` argument receive."""

    tool_context: dict[str, JsonValue] = {}


class ModelInput(BaseModel):
    """`set_model`: the model (and optionally its settings) for the next run."""

    model: str
    model_settings: ModelSettings | None = None


# ---- snapshot tokens (signed by an activity: the secret lives in the worker's environment) ----

SNAPSHOT_VERSION = 2
SNAPSHOT_PREFIX = "rt2."


class SnapshotPayload(BaseModel):
    """What a snapshot token carries: one lane's context (format v2: context only, no thread)."""

    version: int = SNAPSHOT_VERSION
    agent_id: str
    context_ref: str = DEFAULT_CONTEXT_REF
    context: Context
    exported_at: datetime
    expires_at: datetime | None = None


class ExportSnapshotRequest(BaseModel):
    """Input of the `export_snapshot` activity."""

    agent_id: str
    context_ref: str
    context: Context
    ttl_s: float | None = None


class RestoreSnapshotRequest(BaseModel):
    """Input of the `restore_snapshot` activity."""

    token: str
