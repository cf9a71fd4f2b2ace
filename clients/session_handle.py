"""A session's handle: asks, control of its active run, context ops, config, queries and export.

`clients.sessions.Sessions.get(session_id)` returns one; see `clients.sessions` for the
session model and docs/client.md for examples.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Unpack

from pydantic import JsonValue, TypeAdapter
from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from clients import session_inputs
from clients.base import STALE_RECHECK_S, STALE_REFUSAL_S, StoreReader, Timeouts, WorkflowControls
from clients.branches import (
    Branched,
    BranchPoint,
    MessageRef,
    edit_point,
    family_root,
    regenerate_point,
    start_branch,
)
from clients.erase import ErasedSession, delete_workflows, terminate_all, workflows_of
from clients.errors import RejectedError, workflow_rejection
from clients.eval_cases import case_from_thread
from clients.inputs import new_id, request_ref
from clients.run_start import is_not_found
from clients.runs import RunHandle
from clients.session_ask import (
    DEFAULT_AGENT_ID,
    AskOptions,
    ask_payload,
    ask_with_start,
    ended_busy_request,
    start_payload,
)
from clients.session_attachments import resolve_attachments
from clients.stream import SessionEvent, session_events
from contracts import Ack, ModelSettings, Trace
from contracts.approval import PendingApproval
from contracts.branches import Branch, BranchKind, BranchList
from contracts.compaction import CompactInput
from contracts.effects import AgentState, AgentStateValue
from contracts.errors import BUSY, NOT_FOUND, UNKNOWN_REQUEST
from contracts.session import (
    AskAccepted,
    AskInput,
    ExportResult,
    ForkInput,
    ForkResult,
    RequestRecord,
    RequestResult,
    ResetInput,
    SessionStatus,
)
from contracts.session_memo import RenameInput
from contracts.web_ui import static_details, static_summary
from conversation import Context
from conversation.attachments import Attachment
from store.files import FileStore

RECORDS = TypeAdapter(list[RequestRecord])
__all__ = ["DEFAULT_AGENT_ID", "RECORDS", "AskOptions", "SessionHandle", "ask_with_start"]


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

    async def ask(self, query: str | AskInput, **options: Unpack[AskOptions]) -> AskAccepted:
        """Ask `query`; returns what happened (`disposition`), the request's id and its run's id.

        With `config`, a session that does not run yet is started with it (and with
        `agent_id`, `session_policy` and `snapshot`, a token of `export`); a running
        session keeps its own config. Without `config` the session must already run.

        Args:
            query: the user's turn, or an ask built by `clients.session_ask.ask_input` (it carries
                `request_id`, `overrides`, `context_policy`, `on_busy` and `expected_last_request`;
                `output` goes into its `overrides`: `clients.output.output_override`).
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
                webhook_url: where a signed webhook goes when the request ends (checked against
                    `REACT_WEBHOOK_ALLOW`; docs/schedules-and-webhooks.md). Without it, the
                    session's default (`set_webhook`), then the agent's (`config.webhook_url`).
                no_webhook: no webhook for this request, whatever the defaults say.
                session_webhook_url: the default webhook of a new session (checked as `webhook_url`).
                attachments: files the user message carries: paths, bytes, `Attachment` models or
                    `AttachmentSource`s (`clients.session_attachments`); their bytes go to the
                    payload store first, under the deployment's attachment policy.
                attachment_owner: the principal the new files' records belong to (default `local`).

        A `busy` refusal by a request whose run has in fact ended is asked again at once with
        `after_request_id` naming it (for up to `STALE_REFUSAL_S` after the first refusal): a run
        ends a moment before its session records that, so an ask sent as soon as the run's result
        says it ended can still find the session busy; asked so, it waits for that end instead,
        and is answered `started` as soon as the session applies it.

        Raises:
            RejectedError: `busy` (another request runs), `stale`, `ask_queue_full`, `invalid_input`,
                `payload_too_large`, a `snapshot_*` code, or an attachment's refusal
                (`AttachmentRefusedError`: `media_type_mismatch`, ...); nothing was recorded.
            TypeError: a built ask with options it carries.
        """
        attachments: list[Attachment] = []
        given = options.get("attachments")
        if given and not isinstance(query, AskInput):
            request_id = options.get("request_id") or new_id()
            attachments = await resolve_attachments(
                given,
                self._store.blobs(),
                session_id=self.workflow_id,
                request_id=request_id,
                owner=options.get("attachment_owner"),
            )
            options = {**options, "request_id": request_id}
            del options["attachments"]
        ask = ask_payload(query, options, attachments)
        deadline: float | None = None  # from the first refusal: an ask itself may take long under load
        while True:
            try:
                return await self._ask_once(ask, options)
            except RejectedError as rejection:
                now = asyncio.get_running_loop().time()
                deadline = now + STALE_REFUSAL_S if deadline is None else deadline
                if rejection.code != BUSY or now > deadline:
                    raise
                ended = await ended_busy_request(self._client, self, rejection)
                if ended is None or ask.on_busy != "reject":
                    raise
                if ended == ask.after_request_id:  # an older session ignores the field: ask again later
                    await asyncio.sleep(STALE_RECHECK_S)
                ask = ask.model_copy(update={"after_request_id": ended})

    async def _ask_once(self, ask: AskInput, options: AskOptions) -> AskAccepted:
        config = options.get("config")
        if config is None:
            return await self._update("ask", ask, AskAccepted, self._timeouts.control)
        start = start_payload(config, options)
        agent_id = start.agent_id
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
        return await self._update("await_result", request_ref(request_id), RequestResult, None)

    async def ask_sync(self, query: str | AskInput, **options: Unpack[AskOptions]) -> RequestResult:
        """`ask`, then `await_result`: the request's record and answer once it has ended (see `ask`).

        A steered ask answers with the running request's record and answer.
        """
        accepted = await self.ask(query, **options)
        return await self.await_result(accepted.request_id)

    # ---- compaction and config for the next run ----------------------------------------------

    async def compact(
        self, request: CompactInput | None = None, *, op_id: str | None = None, model: str | None = None
    ) -> Ack:
        """Summarise the active lane's older turns (deferred while a run is active).

        `request` is a compaction built by `clients.session_inputs.compact_input` (it carries
        `op_id` and `model`).

        Returns:
            `applied`, `deferred`, `duplicate` (the op id was applied before) or `rejected`
            (`nothing_to_compact`, ...).
        """
        key = request.op_id if request is not None else op_id
        return await self._acked(
            "compact", lambda: session_inputs.compact_input(request or op_id, model), key, self._timeouts.work
        )

    async def set_system_prompt(self, system_prompt: str | None) -> Ack:
        """The base system prompt from the next run on (None clears it); `accepted`."""
        return await self._acked(
            "set_system_prompt", lambda: session_inputs.system_prompt_input(system_prompt)
        )

    async def register_tool(self, name: str) -> Ack:
        """Offer a tool of the worker's registry from the next run on; `rejected` (`unknown_tool`) if none."""
        return await self._acked(
            "register_tool",
            lambda: session_inputs.tool_name_input(name, "register_tool"),
            wait=self._timeouts.work,
        )

    async def unregister_tool(self, name: str) -> Ack:
        """Stop offering a tool from the next run on; `rejected` (`unknown_tool`) if it was not offered."""
        return await self._acked(
            "unregister_tool", lambda: session_inputs.tool_name_input(name, "unregister_tool")
        )

    async def set_tool_context(self, tool_context: Mapping[str, JsonValue]) -> Ack:
        """What tools taking a `tool_context` argument receive, from the next run on."""
        return await self._acked("set_tool_context", lambda: session_inputs.tool_context_input(tool_context))

    async def set_model(self, model: str, settings: ModelSettings | None = None) -> Ack:
        """The model (and optionally its settings) from the next run on."""
        return await self._acked("set_model", lambda: session_inputs.model_input(model, settings))

    async def set_webhook(self, webhook_url: str | None) -> Ack:
        """The session's default webhook for the requests asked from now on (None clears it).

        A request asked without its own `webhook_url` calls back there (over the agent's
        `config.webhook_url`); requests already asked keep theirs.

        Returns:
            `accepted`, or `rejected` with `invalid_input` naming `webhook_url` when the
            deployment's allow-list refuses it (nothing was sent).
        """
        return await self._acked("set_webhook", lambda: session_inputs.webhook_input(webhook_url))

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
        return await self._context(session_inputs.context_query(context_ref))

    async def requests(self) -> list[RequestRecord]:
        """The records of the last 100 requests, oldest first (query preview, outcome, run workflow id)."""
        return RECORDS.validate_python(await self._query_value("requests", list[RequestRecord]))

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
        request = session_inputs.export_input(context_ref, ttl_s)
        return await self._update("export", request, ExportResult, self._timeouts.work)

    # ---- agent state, fork and reset ---------------------------------------------------------

    async def agent_state(self) -> AgentState:
        """The agent state (a JSON object) the next run's tools start from (README, "Agent state")."""
        return (await self._query("agent_state", AgentStateValue)).root

    async def fork(
        self, request: ForkInput | None = None, *, seq: int | None = None, session_id: str | None = None
    ) -> ForkResult:
        """Start a new session from this one's thread as it stood after entry `seq` (default: the latest).

        The new session (id `session_id`, default `<this id>-fork-<n>`) starts from the
        active lane's projection at that seq, this session's config and agent state, and
        names this one in its status (`forked_from`); it outlives this session. `request`
        is a fork built by `clients.session_inputs.fork_input` (it carries both).

        Raises:
            RejectedError: `seq_out_of_range` (nothing was started), `invalid_input` (a negative
                seq, or `session_id` already runs).
        """
        payload = session_inputs.fork_input(request or seq, session_id)
        return await self._update("fork", payload, ForkResult, self._timeouts.work)

    async def eval_case(
        self, request_id: str | None = None, *, name: str | None = None
    ) -> dict[str, JsonValue]:
        """Request `request_id` (default: the last) as an evaluation case ("from a thread").

        pydantic-evals' case form: `inputs` is the query and the tool results its run got,
        `expected_output` its answer (`clients.eval_cases`); `name` defaults to the request id.

        Raises:
            RejectedError: `unknown_request` (no such request, or none asked yet).
        """
        if request_id is None:
            records = await self.requests()
            if not records:
                raise RejectedError(UNKNOWN_REQUEST, "the session has no request yet")
            request_id = records[-1].request_id
        return await case_from_thread(self.thread(0), request_id, name or request_id)

    async def rename(self, title: str) -> str:
        """Name the thread: listings show `title` instead of its first message (`contracts.session_memo`).

        Returns:
            The title as kept (surrounding blanks removed).

        Raises:
            RejectedError: `invalid_input` (blank, more than one line), `payload_too_large`
                (over `MAX_TITLE_CHARS`); nothing changed.
        """
        named = await self._update(
            "rename", session_inputs.rename_input(title), RenameInput, self._timeouts.control
        )
        return named.title

    async def reset_thread(
        self, request: ResetInput | None = None, *, reason: str | None = None, op_id: str | None = None
    ) -> Ack:
        """Start the conversation afresh: an empty context on the active lane (the thread keeps every entry).

        `request` is a reset built by `clients.session_inputs.reset_input` (it carries both).

        Returns:
            `applied` (idle), `deferred` (applied when the active run ends), `duplicate` or `rejected`.
        """
        key = request.op_id if request is not None else op_id
        return await self._acked(
            "reset_thread", lambda: session_inputs.reset_input(request or reason, op_id), key
        )

    # ---- branches: edit and regenerate on fork (docs/branches.md) -------------------------------

    async def regenerate(self, request_id: str | None = None, *, session_id: str | None = None) -> Branched:
        """Ask request `request_id` (default: the last) again on a new branch forked right before it.

        The branch (id `session_id`, default `<this id>-fork-<n>`) is recorded at the family's
        root and becomes its head; this session keeps its answer. The branch's request has the
        same id as the one it asks again.

        Raises:
            RejectedError: `busy`, `nothing_to_regenerate`, `unknown_message` (nothing forked).
        """
        point = await regenerate_point(self, request_id)
        return await self._branch(point, "regenerate", point.request_id, session_id)

    async def edit(
        self, message: MessageRef, text: str, *, request_id: str | None = None, session_id: str | None = None
    ) -> Branched:
        """Ask `text` in place of user message `message` (its seq, or its request's id) on a new branch.

        The branch forks right before that message; its request is `request_id` (default: new).

        Raises:
            RejectedError: `unknown_message`, `busy`, `invalid_input`, `payload_too_large` (nothing forked).
        """
        point = await edit_point(self, message, text)
        return await self._branch(point, "edit", request_id or new_id(), session_id)

    async def branches(self) -> BranchList:
        """The branches of this session's family (read at its root), oldest first: the last is the head."""
        root = family_root(await self.status(), self.workflow_id)
        return await self.sibling(root)._query("branches", BranchList)

    async def record_branch(self, branch: Branch) -> BranchList:
        """Record `branch` at this session, its family's root: it becomes the head (a branch refuses it)."""
        return await self._update("record_branch", branch, BranchList, self._timeouts.work)

    async def _branch(
        self, point: BranchPoint, kind: BranchKind, asked: str, session_id: str | None
    ) -> Branched:
        root = self.sibling(point.root_id)
        branch = await start_branch(
            self, point, kind, asked_request_id=asked, session_id=session_id, record=root.record_branch
        )
        accepted = await self.sibling(branch.session_id).ask(
            point.text, request_id=asked, attachments=list(point.attachments)
        )
        return Branched(branch, accepted)

    def sibling(self, session_id: str) -> SessionHandle:
        """Another session's handle on this one's client."""
        return SessionHandle(self._client, session_id, self._timeouts, self._store, self._task_queue)

    # ---- erasure -------------------------------------------------------------------------------

    async def delete(self) -> ErasedSession:
        """Erase this session from Temporal: terminate it if it runs, delete it and every run it started.

        Its forks are kept (a fork outlives its parent). The runs are the ones its request
        records name and every other child Temporal lists with the session as its parent
        (`clients.erase`). A session that does not exist is `not_found`. The records of the files
        this client attached to it (`clients.session_attachments`, in the store `REACT_STORE_URL`
        names) are deleted before the workflows; the bytes stay in the payload store
        (content-addressed, maybe shared: docs/attachments.md).

        Raises:
            RejectedError: `not_found` (no such session: nothing was deleted).
            RPCError: Temporal refused or did not answer (erasing again finishes the job).
            StoreError: the store of file records did not answer (no workflow was deleted yet).
        """
        found = await self.erasable()
        await terminate_all(self._client, self.workflow_id, found)
        files = FileStore()
        try:
            deleted_files = await files.delete_session(self.workflow_id)
        finally:
            await files.close()
        erased = await delete_workflows(self._client, self.workflow_id, found)
        erased.files = deleted_files
        return erased

    async def erasable(self) -> dict[str, str]:
        """{workflow id: type} of what `delete` deletes besides the session (its runs, their children).

        Raises:
            RejectedError: `not_found` (no such session).
        """
        try:
            await self._handle.describe()
        except RPCError as error:
            if is_not_found(error):
                raise RejectedError(NOT_FOUND, f"no session {self.workflow_id!r}") from None
            raise
        try:
            run_ids = [record.run_workflow_id for record in await self.requests()]
        except (RejectedError, RPCError, WorkflowQueryFailedError):
            run_ids = []  # no worker answers its queries: its runs are found by their parent link
        return await workflows_of(self._client, self.workflow_id, run_ids)
