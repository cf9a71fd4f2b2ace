"""Payloads of the `AgentSession` workflow: a conversation that outlives every run."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints, model_validator

from contracts import v1
from contracts.agent import AgentConfig, QueryText
from contracts.bounds import Id, Refs, json_size_at_most
from contracts.branches import Branch
from contracts.effects import MAX_STATE_BYTES, AgentState
from contracts.limits import MAX_CONTEXT_BYTES, MAX_OVERRIDES_BYTES, MAX_SNAPSHOT_CHARS
from contracts.llm import Usage
from contracts.run import Outcome, RunStatus
from contracts.thread import SegmentRef
from contracts.usage import UsageRecord
from contracts.webhooks import WebhookUrl
from contracts.workflow_ids import SessionId
from conversation import DEFAULT_CONTEXT_REF, Context, ConversationState
from conversation.attachments import Attachments
from conversation.policy import ContextPolicy

SESSION_WORKFLOW_TYPE = "AgentSession"
MAX_KEPT_REQUESTS = 100
MAX_UNWRITTEN_USAGE = 50
"""Usage rows a session carries unwritten through continue-as-new (each under 1.5 KB)."""
QUERY_PREVIEW_CHARS = v1.QUERY_PREVIEW_CHARS

SessionState = Literal["idle", "running"]
OnBusy = Literal["reject", "enqueue", "steer", "interrupt", "rollback"]
AskDisposition = Literal["started", "enqueued", "steered", "interrupted", "rolled_back"]


class RequestRecord(BaseModel):
    """One ask and what became of it (the session keeps the last `MAX_KEPT_REQUESTS`).

    The query and the answer live in the session's thread, once: the record keeps a
    preview of the query and, in `outcome.answer_seq`, where the answer is.
    """

    request_id: str
    run_workflow_id: str
    query_preview: str
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome = Outcome()
    refs: dict[str, str] = {}
    webhook_url: str | None = None
    agent_version: int | None = None
    """The version of the agent made at run time that ran it (None: a code profile's request)."""

    @property
    def status(self) -> RunStatus:
        """The outcome's status."""
        return self.outcome.status

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Read records of version-1 sessions (flat outcome, whole query and result)."""
        return v1.request_record(data)


class RequestResult(RequestRecord):
    """A request's record with its answer's text (what `await_result` and `ask_sync` return)."""

    result: str | None = None


class SessionCarry(BaseModel):
    """What a session hands to its next run when it continues as new; its size does not grow with the thread.

    The thread's older entries are in `archive` (segments in the payload store);
    `conversation` carries only the entries since (at most about 1 MiB and one run's
    entries), each lane's windowed view and the op bookkeeping.
    """

    conversation: ConversationState
    archive: list[SegmentRef] = []
    config: AgentConfig
    requests: list[RequestRecord] = []
    runs_started: int = 0
    window_tokens: int = 0
    agent_state: AgentState = {}
    usage: Usage = Usage()
    forked_from: ForkOrigin | None = None
    forks_started: int = 0
    branches: list[Branch] = []
    unwritten_usage: Annotated[list[UsageRecord], Field(max_length=MAX_UNWRITTEN_USAGE)] = []

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Read the carry of a version-1 session (whole thread, traces), which replay decodes."""
        return v1.session_carry(data)


class ForkOrigin(BaseModel):
    """Where a forked session came from: the parent session and the seq of its thread it forked at.

    `seq` -1 forks before the parent's first entry. `branch_of`: the family root whose branch
    this is (an edit or a regenerate made it: `contracts.branches`); None for a plain fork.
    """

    parent_id: str
    seq: int
    branch_of: str | None = None


class SessionInput(BaseModel):
    """Start a session: which agent, its config, optionally a snapshot token to restore.

    A forked session starts from `fork_context` (the parent lane's projection at the fork
    seq) and `agent_state`, and names its parent in `forked_from`. `webhook_url` is the
    session's default webhook (`set_webhook` changes it; carried across continue-as-new and
    into forks): its requests call back there when their ask names none.
    """

    agent_id: Id
    config: AgentConfig
    context_policy: ContextPolicy | None = None
    snapshot: Annotated[str, StringConstraints(max_length=MAX_SNAPSHOT_CHARS)] | None = None
    carry: SessionCarry | None = None
    forked_from: ForkOrigin | None = None
    fork_context: Annotated[Context, json_size_at_most(MAX_CONTEXT_BYTES, "fork_context")] | None = None
    agent_state: Annotated[AgentState, json_size_at_most(MAX_STATE_BYTES, "agent_state")] = {}
    webhook_url: WebhookUrl | None = None


class ForkInput(BaseModel):
    """Payload of `fork`: the seq of this session's thread to fork at (default: the latest).

    `seq` -1 forks before the first entry (an empty conversation with this session's config
    and agent state). `session_id` is the new session's id (default: `<this id>-fork-<n>`, cut
    to fit like every derived id, `contracts.workflow_ids`): not blank, at most
    `MAX_SESSION_ID_CHARS` characters, no control characters. `branch_of` makes the fork a
    branch of that family root (`ForkOrigin.branch_of`).
    """

    seq: Annotated[int, Field(ge=-1)] | None = None
    session_id: SessionId | None = None
    branch_of: SessionId | None = None


class ForkResult(BaseModel):
    """Answer of `fork`: the new session's id and where it forked."""

    session_id: str
    forked_from: ForkOrigin


class ResetInput(BaseModel):
    """Payload of `reset_thread`: start the conversation afresh (recorded as an op; the thread stays)."""

    op_id: Id | None = None
    reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None


class AskInput(BaseModel):
    """A user turn. `overrides` replaces fields of the agent config for this request only.

    The context policy of a request is, highest first: this ask's, the session's, the
    agent config's, the default.

    `on_busy` says what to do when another request is active: `reject` it (`busy`),
    `enqueue` this one after it (a FIFO of at most `MAX_QUEUED_ASKS`), `steer` the
    active run with this query, `interrupt` (cancel the active request, then run this
    one) or `rollback` (cancel it, put its lane back to the context it had before it,
    as a recorded context op, then run this one). `expected_last_request` is the id of
    the request the caller believes ran last: another one since is refused as `stale`.
    `refs` are where the ask came from (a schedule's firing: `schedule_id`, `firing_id`):
    the request's record keeps them, and so does the user message its run appends.
    `webhook_url`: where a signed webhook goes when the request ends (`contracts.webhooks`);
    without one, the session's default, then the agent's (`workflows.session.settings.webhook_for`).
    `no_webhook`: no webhook for this request, whatever the defaults say.
    `after_request_id`: the request whose run the caller saw end. A run ends a moment before its
    session applies that end, so an ask sent at once can find the session still busy with it:
    with this id, an ask that would be refused `busy` by that very request (and nothing waits)
    waits for its end instead, and is answered `started` as soon as the session applies it.
    The typed client sets it when a `busy` refusal names a request whose run has ended.
    `attachments`: files the user message carries, by reference (`conversation.attachments`);
    their bytes are already in the payload store.
    `agent_version` and `version_config`: the version of an agent made at run time that answers
    this request and its config (`store.agent_versions`; the gateway resolves `name` or `name@N`
    before it asks). The run uses that config instead of the session's (overrides on top) and its
    system prompt; the request's record keeps the number. Both or neither.
    """

    query: QueryText
    attachments: Attachments = []
    request_id: Id | None = None
    overrides: Annotated[dict[str, JsonValue], json_size_at_most(MAX_OVERRIDES_BYTES, "overrides")] = {}
    context_policy: ContextPolicy | None = None
    on_busy: OnBusy = "reject"
    expected_last_request: Id | None = None
    refs: Refs = {}
    webhook_url: WebhookUrl | None = None
    no_webhook: bool = False
    after_request_id: Id | None = None
    agent_version: Annotated[int, Field(ge=1)] | None = None
    version_config: AgentConfig | None = None

    @model_validator(mode="after")
    def _one_webhook_choice(self) -> AskInput:
        if self.no_webhook and self.webhook_url is not None:
            raise ValueError("webhook_url and no_webhook: give one or the other")
        if (self.agent_version is None) != (self.version_config is None):
            raise ValueError("agent_version and version_config: give both or neither")
        return self


class AskAccepted(BaseModel):
    """The ask was accepted: what happened to it (`disposition`) and the request that answers it.

    `started`: its run starts now. `enqueued`: it runs after the active request and the
    ones queued before it (`position` 1 is next). `steered`: the query went to the
    active run as steer input `input_id`; `request_id` is that active request, whose
    answer answers it. `interrupted` / `rolled_back`: request `replaced_request_id`
    was cancelled (and with `rolled_back` its lane put back) and this one runs next.
    """

    request_id: str
    run_workflow_id: str
    disposition: AskDisposition = "started"
    position: int | None = None
    input_id: str | None = None
    replaced_request_id: str | None = None


class RequestRef(BaseModel):
    """Names one request (for `await_result`)."""

    request_id: Id


class SessionStatus(BaseModel):
    """Answer of the `status` query."""

    agent_id: str
    state: SessionState
    active_request_id: str | None = None
    active_run_workflow_id: str | None = None
    config: AgentConfig
    thread_length: int
    archived_entries: int = 0
    active_context_ref: str = DEFAULT_CONTEXT_REF
    pending_context_op_id: str | None = None
    requests_kept: int = 0
    waiting_requests: int = 0
    forked_from: ForkOrigin | None = None
    webhook_url: str | None = None
    """The session's own default webhook (`set_webhook`); the agent's is `config.webhook_url`."""
    head: str | None = None
    """A family root's newest branch (`contracts.branches`), None when it has none."""


class ContextQuery(BaseModel):
    """The `context` query's lane (default: the active one)."""

    context_ref: Id | None = None


class ExportInput(BaseModel):
    """Export the conversation: a lane (default: the active one) and an optional lifetime."""

    context_ref: Id | None = None
    ttl_s: Annotated[float, Field(gt=0, le=10 * 365 * 86_400, allow_inf_nan=False)] | None = None


class ExportResult(BaseModel):
    """A signed, portable snapshot token of the conversation."""

    token: str
    expires_at: datetime | None = None
