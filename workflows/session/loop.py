"""One session's loop and the state it drives: thread, config, requests, asks, op slot, forwarding, compactor.

`AgentSession` decodes and delegates, `SessionControls` decides what control input
does, `SessionAsks` what an ask does, and this class owns the parts and offers what
they ask of them. `run` restores a snapshot (when the session starts from one), then
serves requests one at a time and returns the input to continue as new with, once
that is due and the session is idle (nothing active, nothing waiting) with every
handler finished.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts import Ack, CancelInput, ControlAck, InputKind, SteerInput, ThreadPage, ThreadQuery
from contracts.approval import ApproveInput
from contracts.effects import AgentState
from contracts.session import (
    AskAccepted,
    AskInput,
    ExportInput,
    ExportResult,
    ForkInput,
    ForkOrigin,
    ForkResult,
    RequestRecord,
    RequestResult,
    ResetInput,
    SessionCarry,
    SessionInput,
    SessionStatus,
)
from contracts.session_config import SystemPromptInput
from conversation import Context, ContextModifyInput, ContextOpPayload, ConversationState
from workflows.op_slot import OpSlot
from workflows.session.asks import SessionAsks
from workflows.session.compactor import Compactor
from workflows.session.export import export_lane
from workflows.session.fork import fork_problem, projection_at, reset_request, seed_fork, start_fork
from workflows.session.request_book import RequestBook
from workflows.session.requests import SessionRequests, set_idle_details
from workflows.session.restore import restore_snapshot
from workflows.session.run_forwarding import RunForwarder
from workflows.session.settings import SessionSettings
from workflows.session.thread import TAIL_CHARS, SessionThread


class SessionLoop:
    """One session's loop and its parts; the thread is the only writer of the conversation."""

    def __init__(self, session: SessionInput) -> None:
        """Continue from carried state (after continue-as-new) or start an empty conversation."""
        carry = session.carry or SessionCarry(
            conversation=ConversationState.new(session.config.system_prompt), config=session.config
        )
        self.agent_id = session.agent_id
        self._input = session
        self._thread = SessionThread(carry.conversation, carry.archive, carry.window_tokens)
        self._settings = SessionSettings(carry.config, session.context_policy)
        self._book = RequestBook(carry.requests, carry.runs_started)
        self._ops = OpSlot()
        self._forwarder = RunForwarder(self._book)
        self._compactor = Compactor(self._thread)
        self._requests = SessionRequests(
            self._book, self._thread, self._settings, self._ops, self._forwarder, self._compactor
        )
        self._asks = SessionAsks(self._book, self._settings, self._forwarder)
        self._requests.usage = carry.usage
        self._requests.agent_state = carry.agent_state if session.carry else session.agent_state
        self.forked_from = carry.forked_from if session.carry else session.forked_from
        self._forks = carry.forks_started
        if session.carry is None:
            seed_fork(session, self._thread, self._settings.session_policy())
        self._ready = session.snapshot is None or session.carry is not None
        self._failure: ApplicationError | None = None

    async def run(self) -> SessionInput:
        """Serve requests one at a time; return the next input once continuing as new is due, while idle.

        Raises:
            ApplicationError: the snapshot the session starts from cannot be restored (`snapshot_*`).
        """
        if not self._ready:
            self._failure = await restore_snapshot(self._input, self._thread)
            self._ready = True
            if self._failure is not None:
                await workflow.wait_condition(workflow.all_handlers_finished)
                raise self._failure
        set_idle_details(self._book.runs_started)
        while True:
            await workflow.wait_condition(lambda: self._book.next is not None or self._continue_due())
            if self._book.next is not None:
                await self._requests.run(self._book.next)
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            book = self._book
            if (
                book.next is None and book.active is None and not book.waiting
            ):  # nothing asked since the check
                return self._next_input()

    def _continue_due(self) -> bool:
        return workflow.info().is_continue_as_new_suggested() or self._thread.tail_chars >= TAIL_CHARS

    def _next_input(self) -> SessionInput:
        settings = self._settings
        carry = SessionCarry(
            conversation=self._thread.carried(),
            archive=self._thread.archive,
            config=settings.config,
            requests=self._book.records,
            runs_started=self._book.runs_started,
            window_tokens=self._thread.window_tokens,
            usage=self._requests.usage,
            agent_state=self._requests.agent_state,
            forked_from=self.forked_from,
            forks_started=self._forks,
        )
        return SessionInput(
            agent_id=self.agent_id, config=settings.config, context_policy=settings.policy, carry=carry
        )

    # ---- requests --------------------------------------------------------------------------

    def ask_problem(self, ask: AskInput) -> ApplicationError | None:
        """Why an ask cannot be accepted now (the `ask` validator's rule), or None."""
        return self._asks.problem(ask)

    async def accept(self, ask: AskInput) -> AskAccepted:
        """Once the session is ready, act on the ask by its `on_busy` (or fail as the session does)."""
        await workflow.wait_condition(lambda: self._ready)
        if self._failure is not None:
            raise self._failure
        return await self._asks.accept(ask)

    async def result_of(self, request_id: str) -> RequestResult:
        """The request's record once terminal, with its answer's text."""
        return await self._requests.result_of(request_id)

    # ---- what the controls ask of the session ----------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a request is active (context ops wait for its end)."""
        return self._book.active is not None

    @property
    def active_context_ref(self) -> str:
        """The lane runs append to."""
        return self._thread.active_context_ref

    def is_applied(self, op_id: str) -> bool:
        """Whether a context op with this id was already applied."""
        return self._thread.is_applied(op_id)

    def apply_op(self, op: ContextOpPayload) -> None:
        """Apply a context op now (the session is idle)."""
        self._thread.apply(op, {})

    def defer_op(self, op: ContextOpPayload) -> None:
        """Keep a context op for the end of the active run (latest wins)."""
        self._ops.defer(op)

    async def compaction(self, op_id: str, model: str | None) -> ContextOpPayload | None:
        """The compaction op of the active lane under the session's policy; None: nothing to summarise."""
        settings = self._settings
        return await self._compactor.compaction(op_id, settings.session_policy(), settings.config, model)

    async def configure(self, name: str, payload: BaseModel) -> Ack:
        """Apply a config control (a new system prompt also becomes the conversation's base prompt)."""
        ack = await self._settings.apply(name, payload)
        if isinstance(payload, SystemPromptInput):
            self._thread.set_base_system_prompt(payload.system_prompt)
        return ack

    async def forward_input(self, kind: InputKind, payload: SteerInput, *, wait: bool) -> Ack:
        """Forward steer/inject input to the active run (with `wait`: the run's own `Ack`)."""
        return await self._forwarder.forward_input(kind, payload, wait=wait)

    async def forward_cancel(self, payload: CancelInput, *, wait: bool) -> Ack:
        """Forward a cancel to the active run (with `wait`: `accepted` once it ends cancelled)."""
        return await self._forwarder.forward_cancel(payload, wait=wait)

    async def forward_approve(self, payload: ApproveInput, *, wait: bool) -> Ack:
        """Forward an approval decision to the active run (with `wait`: the run's own `Ack`)."""
        return await self._forwarder.forward_approve(payload, wait=wait)

    def answer(self, ack: ControlAck) -> None:
        """A run's answer to input or a cancel the session forwarded."""
        self._forwarder.answer(ack)

    # ---- what the queries and `export` read ------------------------------------------------

    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        active, thread, pending = self._book.active, self._thread, self._ops.pending
        return SessionStatus(
            agent_id=self.agent_id,
            state="running" if active else "idle",
            active_request_id=active.request_id if active else None,
            active_run_workflow_id=active.run_workflow_id if active else None,
            config=self._settings.config,
            thread_length=thread.next_seq,
            archived_entries=thread.first_seq,
            active_context_ref=thread.active_context_ref,
            pending_context_op_id=pending.op_id if pending else None,
            requests_kept=len(self._book.records),
            waiting_requests=len(self._book.waiting),
            forked_from=self.forked_from,
        )

    def page(self, query: ThreadQuery) -> ThreadPage:
        """A page of the thread (a segment reference where it starts in the archive)."""
        return self._thread.page(query)

    def lane(self, context_ref: str | None) -> Context:
        """A lane's materialized context (None: the active lane)."""
        return self._thread.lane(context_ref or self._thread.active_context_ref)

    @property
    def records(self) -> list[RequestRecord]:
        """The last requests, oldest first."""
        return self._book.records

    async def export(self, request: ExportInput) -> ExportResult:
        """A signed snapshot token of one lane's context."""
        return await export_lane(self.agent_id, self._thread, request)

    # ---- agent state, fork and reset (`workflows.session.fork`) -------------------------------

    @property
    def agent_state(self) -> AgentState:
        """The agent state the next run starts from (the last run's, after its tools' effects)."""
        return self._requests.agent_state

    def fork_problem(self, payload: ForkInput) -> ApplicationError | None:
        """Why `fork` cannot fork where asked (`seq_out_of_range`), or None."""
        return fork_problem(payload, self._thread.next_seq)

    async def fork(self, payload: ForkInput) -> ForkResult:
        """Start a new session from the active lane's projection at `payload.seq` (default: the latest)."""
        problem = self.fork_problem(payload)
        if problem is not None:
            raise problem
        seq = payload.seq if payload.seq is not None else self._thread.next_seq - 1
        context = await projection_at(self._thread, self._thread.carried(), seq)
        origin = ForkOrigin(parent_id=workflow.info().workflow_id, seq=seq)
        start = SessionInput(
            agent_id=self.agent_id,
            config=self._settings.config,
            context_policy=self._settings.policy,
            agent_state=self._requests.agent_state,
        )
        child_id, self._forks = await start_fork(start, origin, context, payload.session_id, self._forks)
        return ForkResult(session_id=child_id, forked_from=origin)

    def reset_request(self, payload: ResetInput) -> ContextModifyInput:
        """The context op `reset_thread` submits (an empty context, marked a reset)."""
        return reset_request(payload, self._thread)
