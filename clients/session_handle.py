"""A session's handle: asks, control of its active run, context ops, config, queries and export.

`clients.sessions.Sessions.get(session_id)` returns one; see `clients.sessions` for the
session model and docs/client.md for examples.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from pydantic import JsonValue, TypeAdapter
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy

from clients import inputs
from clients.base import StoreReader, Timeouts, WorkflowControls
from clients.errors import RejectedError, workflow_rejection
from clients.output import OutputLike, output_override
from clients.runs import RunHandle
from clients.stream import SessionEvent, session_events
from contracts import TASK_QUEUE, Ack, AgentConfig, ModelSettings, Trace
from contracts.approval import PendingApproval
from contracts.effects import AgentState, AgentStateValue
from contracts.errors import UNKNOWN_REQUEST
from contracts.session import (
    SESSION_WORKFLOW_TYPE,
    AskAccepted,
    AskInput,
    ExportResult,
    ForkInput,
    ForkResult,
    OnBusy,
    RequestRecord,
    RequestResult,
    ResetInput,
    SessionInput,
    SessionStatus,
)
from contracts.web_ui import static_details, static_summary
from conversation import Context, ContextPolicy

RECORDS = TypeAdapter(list[RequestRecord])
DEFAULT_AGENT_ID = "default"


class AskOptions(TypedDict, total=False):
    """The keyword arguments of `SessionHandle.ask` and `ask_sync` (each is described there)."""

    config: AgentConfig | None
    agent_id: str
    request_id: str | None
    overrides: Mapping[str, JsonValue] | None
    output: OutputLike | None
    context_policy: ContextPolicy | None
    session_policy: ContextPolicy | None
    snapshot: str | None
    on_busy: OnBusy
    expected_last_request: str | None


class SessionHandle(WorkflowControls):
    """One session: asks, control of its active run, context ops, config, queries and export.

    Steer, inject, cancel and approve reach the active run (with none: `rejected`, `idle`); context
    ops are applied at once when idle and after the active run otherwise (`deferred`).
    """

    def __init__(
        self, client: Client, session_id: str, timeouts: Timeouts, store: StoreReader, task_queue: str
    ) -> None:
        """Address the session `session_id` (nothing is sent until a method is called)."""
        super().__init__(client, session_id, timeouts, store)
        self._task_queue = task_queue

    # ---- asks ------------------------------------------------------------------------------

    async def ask(
        self,
        query: str,
        **options: Unpack[AskOptions],
    ) -> AskAccepted:
        """Ask `query`; returns what happened (`disposition`), the request's id and its run's id.

        With `config`, a session that does not run yet is started with it (and with
        `agent_id`, `session_policy` and `snapshot`, a token of `export`); a running
        session keeps its own config. Without `config` the session must already run.

        Args:
            query: the user's turn.
            **options: keyword arguments (`AskOptions`):
                config: the agent of a new session.
                agent_id: the agent id of a new session.
                request_id: the idempotency key (default: a new one): asking again with a known id
                    returns the original request instead of running it twice.
                overrides: agent-config fields for this request only (e.g. `{"model": ...}`).
                output: this request's structured output (`clients.output`; its run's
                    `RunResult.output`: `runs.get(accepted.run_workflow_id).result()`).
                context_policy: this request's context policy (over the session's and the config's).
                session_policy: the context policy of a new session.
                snapshot: a snapshot token a new session starts from.
                on_busy: what to do when another request runs: `reject` (default: `busy`),
                    `enqueue` (run after it; `position` 1 is next), `steer` (the query goes to the
                    running request as steer input; its answer answers this ask), `interrupt`
                    (cancel it, run this one) or `rollback` (cancel it, put its lane back, run this one).
                expected_last_request: the request you believe was asked last (`stale` if another
                    one was asked since; with no request yet, any id is stale).

        Raises:
            RejectedError: `busy` (another request runs), `stale`, `ask_queue_full`, `invalid_input`,
                `payload_too_large`, or a `snapshot_*` code; nothing was recorded.
        """
        output = options.get("output")
        overrides = {**(options.get("overrides") or {}), **(output_override(output) if output else {})}
        ask = inputs.ask_input(
            query,
            request_id=options.get("request_id"),
            overrides=overrides,
            context_policy=options.get("context_policy"),
            on_busy=options.get("on_busy", "reject"),
            expected_last_request=options.get("expected_last_request"),
        )
        config = options.get("config")
        if config is None:
            return await self._update("ask", ask, AskAccepted, self._timeouts.control)
        agent_id = options.get("agent_id", DEFAULT_AGENT_ID)
        start = inputs.session_input(
            agent_id, config, context_policy=options.get("session_policy"), snapshot=options.get("snapshot")
        )
        try:
            return await ask_with_start(
                self._client,
                self.workflow_id,
                ask,
                start,
                task_queue=self._task_queue,
                summary=static_summary(start.config, ask.query, agent_id),
                details=static_details(start.config, ask.query, None, agent_id),
                wait=self._timeouts.control,
            )
        except WorkflowUpdateFailedError as error:
            rejection = workflow_rejection(error)
            if rejection is None:
                raise
            raise rejection from error

    async def await_result(self, request_id: str) -> RequestResult:
        """Wait until the request has ended; its record and its answer's text (any of the last 100 requests).

        Raises:
            RejectedError: `unknown_request` when the session keeps no request with that id.
        """
        return await self._update("await_result", inputs.request_ref(request_id), RequestResult, None)

    async def ask_sync(self, query: str, **options: Unpack[AskOptions]) -> RequestResult:
        """`ask`, then `await_result`: the request's record and answer once it has ended (see `ask`).

        A steered ask answers with the running request's record and answer.
        """
        accepted = await self.ask(query, **options)
        return await self.await_result(accepted.request_id)

    # ---- compaction and config for the next run ----------------------------------------------

    async def compact(self, *, op_id: str | None = None, model: str | None = None) -> Ack:
        """Summarise the active lane's older turns (deferred while a run is active).

        Returns:
            `applied`, `deferred`, `duplicate` (the op id was applied before) or `rejected`
            (`nothing_to_compact`, ...).
        """
        return await self._acked(
            "compact", lambda: inputs.compact_input(op_id, model), op_id, self._timeouts.work
        )

    async def set_system_prompt(self, system_prompt: str | None) -> Ack:
        """The base system prompt from the next run on (None clears it); `accepted`."""
        return await self._acked("set_system_prompt", lambda: inputs.system_prompt_input(system_prompt))

    async def register_tool(self, name: str) -> Ack:
        """Offer a tool of the worker's registry from the next run on; `rejected` (`unknown_tool`) if none."""
        return await self._acked(
            "register_tool",
            lambda: inputs.tool_name_input(name, "register_tool"),
            wait=self._timeouts.work,
        )

    async def unregister_tool(self, name: str) -> Ack:
        """Stop offering a tool from the next run on; `rejected` (`unknown_tool`) if it was not offered."""
        return await self._acked("unregister_tool", lambda: inputs.tool_name_input(name, "unregister_tool"))

    async def set_tool_context(self, tool_context: Mapping[str, JsonValue]) -> Ack:
        """What tools taking a `tool_context` argument receive, from the next run on."""
        return await self._acked("set_tool_context", lambda: inputs.tool_context_input(tool_context))

    async def set_model(self, model: str, settings: ModelSettings | None = None) -> Ack:
        """The model (and optionally its settings) from the next run on."""
        return await self._acked("set_model", lambda: inputs.model_input(model, settings))

    # ---- reading the session -----------------------------------------------------------------

    async def status(self) -> SessionStatus:
        """Idle or running, the active request, the config of the next run, the thread's length."""
        return await self._query("status", SessionStatus)

    async def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls of the active run awaiting a decision (none when the session is idle)."""
        run_id = (await self.status()).active_run_workflow_id
        if run_id is None:
            return []
        return await RunHandle(self._client, run_id, self._timeouts, self._store).pending_approvals()

    async def context(self, context_ref: str | None = None) -> Context:
        """A lane's materialized context (default: the active lane)."""
        return await self._context(inputs.context_query(context_ref))

    async def requests(self) -> list[RequestRecord]:
        """The records of the last 100 requests, oldest first (query preview, outcome, run workflow id)."""
        raw: object = await self._handle.query(
            "requests", result_type=list[RequestRecord], rpc_timeout=self._timeouts.query
        )
        return RECORDS.validate_python(raw)

    async def request(self, request_id: str) -> RequestRecord:
        """The record of one request.

        Raises:
            RejectedError: `unknown_request` when the session keeps no request with that id.
        """
        found = next((r for r in await self.requests() if r.request_id == request_id), None)
        if found is None:
            raise RejectedError(UNKNOWN_REQUEST, f"no request {request_id!r} is kept by this session")
        return found

    async def run(self, request_id: str) -> RunHandle:
        """The handle of the run that served (or serves) a request: its state, thread, context and trace."""
        record = await self.request(request_id)
        return RunHandle(self._client, record.run_workflow_id, self._timeouts, self._store)

    async def trace(self, request_id: str) -> Trace:
        """The trace of a request, read from its run."""
        return await (await self.run(request_id)).trace()

    def events(self, *, from_request: str | None = None) -> AsyncIterator[SessionEvent]:
        """The live events of the session's requests, run after run (see `clients.stream.session_events`)."""
        return session_events(self._client, self, from_request=from_request)

    async def export(self, *, context_ref: str | None = None, ttl_s: float | None = None) -> ExportResult:
        """A signed snapshot token of a lane (default: the active one); `ask(snapshot=...)` restores it.

        Raises:
            RejectedError: e.g. `snapshot_secret_missing` when the worker has no `REACT_SNAPSHOT_SECRET`.
        """
        request = inputs.export_input(context_ref, ttl_s)
        return await self._update("export", request, ExportResult, self._timeouts.work)

    # ---- agent state, fork and reset ---------------------------------------------------------

    async def agent_state(self) -> AgentState:
        """The agent state (a JSON object) the next run's tools start from (README, "Agent state")."""
        return (await self._query("agent_state", AgentStateValue)).root

    async def fork(self, *, seq: int | None = None, session_id: str | None = None) -> ForkResult:
        """Start a new session from this one's thread as it stood after entry `seq` (default: the latest).

        The new session (id `session_id`, default `<this id>-fork-<n>`) starts from the
        active lane's projection at that seq, this session's config and agent state, and
        names this one in its status (`forked_from`); it outlives this session.

        Raises:
            RejectedError: `seq_out_of_range` (nothing was started), `invalid_input` (a negative
                seq, or `session_id` already runs).
        """
        payload = inputs.checked(ForkInput, {"seq": seq, "session_id": session_id}, "fork")
        return await self._update("fork", payload, ForkResult, self._timeouts.work)

    async def reset_thread(self, *, reason: str | None = None, op_id: str | None = None) -> Ack:
        """Start the conversation afresh: an empty context on the active lane (the thread keeps every entry).

        Returns:
            `applied` (idle), `deferred` (applied when the active run ends), `duplicate` or `rejected`.
        """
        return await self._acked(
            "reset_thread",
            lambda: inputs.checked(ResetInput, {"op_id": op_id, "reason": reason}, "reset_thread"),
            op_id,
        )


async def ask_with_start(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    session: SessionInput,
    *,
    task_queue: str = TASK_QUEUE,
    summary: str | None = None,
    details: str | None = None,
    wait: timedelta | None = None,
) -> AskAccepted:
    """The `ask` Update, starting the session with `session` if it does not run yet.

    `wait` bounds each call to the server (None: no bound); `summary` and `details` are the
    new session's static summary and details in the Web UI.

    Raises:
        WorkflowUpdateFailedError: the ask was rejected (`busy`, `invalid_input`, ...).
    """
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        SESSION_WORKFLOW_TYPE,
        session,
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=summary,
        static_details=details,
    )
    accepted: AskAccepted = await client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
        "ask", ask_input, start_workflow_operation=start, result_type=AskAccepted, rpc_timeout=wait
    )
    return accepted
