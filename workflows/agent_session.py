"""The `AgentSession` workflow: one long-lived conversation; each request runs as a `ReActRun` child.

The class is thin: the conversation lives in `SessionThread` (the newest entries in
memory, the rest archived), the config in `SessionSettings`, the requests in
`RequestBook` and `SessionRequests`, the pending op in `OpSlot`, and the forwarding of
control input to the active run in `RunForwarder`. Controls are registered through
`workflows.controls`, the same rule as a run's. The session continues as new when
due, only while idle and after every handler has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts import Ack, AgentConfig, CancelInput, ControlAck, SteerInput, ThreadPage, ThreadQuery
    from contracts.activities import EXPORT_SNAPSHOT_ACTIVITY
    from contracts.compaction import CompactInput
    from contracts.decoding import PayloadProblem, decode_args
    from contracts.errors import NOTHING_TO_COMPACT
    from contracts.session import (
        SESSION_WORKFLOW_TYPE,
        AskAccepted,
        AskInput,
        ContextQuery,
        ExportInput,
        ExportResult,
        RequestRecord,
        RequestRef,
        RequestResult,
        SessionCarry,
        SessionInput,
        SessionStatus,
    )
    from contracts.snapshot import ExportSnapshotRequest
    from conversation import Context, ContextModifyInput, ConversationState
    from workflows import controls
    from workflows.compactor import Compactor
    from workflows.controls import Control
    from workflows.failures import run_error
    from workflows.op_slot import OpSlot, op_ack
    from workflows.request_book import RequestBook
    from workflows.run_forwarding import RunForwarder
    from workflows.session_config import CONFIG_CONTROLS, SessionSettings
    from workflows.session_requests import SessionRequests, set_idle_details
    from workflows.session_restore import restore_snapshot
    from workflows.session_thread import TAIL_CHARS, SessionThread

_PLACEHOLDER = SessionInput(agent_id="", config=AgentConfig(model="none"))


def _decode(args: Sequence[Any], model: type[Any], name: str) -> Any:
    """Decode or raise the named `ApplicationError` (for validators and queries)."""
    try:
        return decode_args(args, model, name)
    except PayloadProblem as problem:
        raise ApplicationError(problem.message, type=problem.code, non_retryable=True) from None


@workflow.defn(name=SESSION_WORKFLOW_TYPE)
class AgentSession:
    """A conversation that outlives every run; reachable by its workflow id alone."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """Restore carried state (after continue-as-new) or start an empty conversation."""
        self._problem: PayloadProblem | None = None
        try:
            session = decode_args(args, SessionInput, "AgentSession input", required=True)
        except PayloadProblem as problem:
            session, self._problem = _PLACEHOLDER, problem
        carry = session.carry or SessionCarry(
            conversation=ConversationState.new(session.config.system_prompt), config=session.config
        )
        self._input = session
        self._thread = SessionThread(carry.conversation, carry.archive, carry.window_tokens)
        self._settings = SessionSettings(carry.config, session.context_policy, carry.conversation)
        self._book = RequestBook(carry.requests, carry.runs_started)
        self._ops = OpSlot()
        self._forwarder = RunForwarder(self._book)
        self._compactor = Compactor(carry.conversation)
        self._requests = SessionRequests(
            self._book, self._thread, self._settings, self._ops, self._forwarder, self._compactor
        )
        self._ready = session.snapshot is None or session.carry is not None
        self._failure: ApplicationError | None = None
        controls.register(self._controls())

    def _controls(self) -> list[Control]:
        forwarder, settings = self._forwarder, self._settings
        return [
            Control(
                "steer", SteerInput, lambda p, signal: forwarder.forward_input("steer", p, wait=not signal)
            ),
            Control(
                "inject", SteerInput, lambda p, signal: forwarder.forward_input("inject", p, wait=not signal)
            ),
            Control("cancel", CancelInput, lambda p, signal: forwarder.forward_cancel(p, wait=not signal)),
            Control("context_modify", ContextModifyInput, self._context_modify),
            Control("compact", CompactInput, self._compact),
            *(
                Control(name, model, lambda p, _signal, name=name: settings.apply(name, p))
                for name, model in CONFIG_CONTROLS.items()
            ),
        ]

    @workflow.run
    async def run(self, *args: Any) -> None:
        """Serve requests one at a time; continue as new when due, while idle."""
        if self._problem is not None:
            raise ApplicationError(self._problem.message, type=self._problem.code, non_retryable=True)
        if not self._ready:
            self._failure = await restore_snapshot(self._input, self._thread.conversation)
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
            if self._book.next is None and self._book.active is None:  # nothing awaited since the check
                workflow.continue_as_new(self._next_input())

    def _continue_due(self) -> bool:
        return workflow.info().is_continue_as_new_suggested() or self._thread.tail_chars >= TAIL_CHARS

    def _next_input(self) -> SessionInput:
        carry = SessionCarry(
            conversation=self._thread.conversation,
            archive=self._thread.archive,
            config=self._settings.config,
            requests=self._book.records,
            runs_started=self._book.runs_started,
            window_tokens=self._thread.window_tokens,
        )
        settings = self._settings
        return SessionInput(
            agent_id=self._input.agent_id, config=settings.config, context_policy=settings.policy, carry=carry
        )

    async def _context_modify(self, request: ContextModifyInput, via_signal: bool) -> Ack:
        ack, op = op_ack(self._thread.conversation, request, running=self._book.active is not None)
        if op is not None and ack.status == "applied":
            self._thread.apply(op, {})
        elif op is not None and ack.status == "deferred":
            self._ops.defer(op)
        return ack

    async def _compact(self, request: CompactInput, via_signal: bool) -> Ack:
        op_id = request.op_id or f"compact-{workflow.uuid4()}"
        if self._thread.conversation.is_applied(op_id):
            return Ack(status="duplicate", op_id=op_id, message="this op_id was already applied")
        policy = self._settings.session_policy()
        op = await self._compactor.compaction(op_id, policy, self._settings.config, request.model)
        if op is None:
            return Ack(
                status="rejected",
                op_id=op_id,
                reason=NOTHING_TO_COMPACT,
                message="nothing older to summarise",
            )
        if self._book.active is not None:
            self._ops.defer(op)
            return Ack(status="deferred", op_id=op_id)
        self._thread.apply(op, {})
        return Ack(status="applied", op_id=op_id)

    async def _ready_to_serve(self) -> None:
        await workflow.wait_condition(lambda: self._ready)
        if self._failure is not None:
            raise self._failure

    def _check_ask(self, args: Sequence[Any]) -> None:
        problem = self._requests.problem(_decode(args, AskInput, "ask"))
        if isinstance(problem, PayloadProblem):
            raise ApplicationError(problem.message, type=problem.code)
        if problem is not None:
            raise problem

    # ---- handlers --------------------------------------------------------------------------

    @workflow.update(name="ask")
    async def ask(self, *args: Any) -> AskAccepted:
        """Start a run for this query and return at once with its ids."""
        await self._ready_to_serve()
        return self._requests.accept(_decode(args, AskInput, "ask"))

    @ask.validator
    def _validate_ask(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.update(name="await_result")
    async def await_result(self, *args: Any) -> RequestResult:
        """Wait until the request is terminal and return its record with the answer."""
        return await self._requests.result_of(_decode(args, RequestRef, "await_result").request_id)

    @await_result.validator
    def _validate_await_result(self, *args: Any) -> None:
        _decode(args, RequestRef, "await_result")

    @workflow.update(name="ask_sync")
    async def ask_sync(self, *args: Any) -> RequestResult:
        """Ask, then wait for the result."""
        await self._ready_to_serve()
        accepted = self._requests.accept(_decode(args, AskInput, "ask_sync"))
        return await self._requests.result_of(accepted.request_id)

    @ask_sync.validator
    def _validate_ask_sync(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.signal(name="control_ack")
    def control_ack(self, *args: Any) -> None:
        """A run's answer to input or a cancel this session forwarded (internal)."""
        try:
            self._forwarder.answer(decode_args(args, ControlAck, "control_ack", required=True))
        except PayloadProblem as problem:
            workflow.logger.warning("dropped a control_ack signal: %s", problem)

    @workflow.update(name="export")
    async def export(self, *args: Any) -> ExportResult:
        """A signed snapshot token of one lane's context (default: the active lane)."""
        request: ExportInput = _decode(args, ExportInput, "export")
        lane = request.context_ref or self._thread.conversation.active_context_ref
        try:
            return await workflow.execute_activity(
                EXPORT_SNAPSHOT_ACTIVITY,
                ExportSnapshotRequest(
                    agent_id=self._input.agent_id,
                    context_ref=lane,
                    context=self._thread.conversation.lane(lane),
                    ttl_s=request.ttl_s,
                ),
                result_type=ExportResult,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary=f"export {lane}",
            )
        except ActivityError as err:
            error = run_error(err)
            raise ApplicationError(error.message, type=error.type) from None

    @export.validator
    def _validate_export(self, *args: Any) -> None:
        _decode(args, ExportInput, "export")

    # ---- queries ---------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        active, conversation, pending = self._book.active, self._thread.conversation, self._ops.pending
        return SessionStatus(
            agent_id=self._input.agent_id,
            state="running" if active else "idle",
            active_request_id=active.request_id if active else None,
            active_run_workflow_id=active.run_workflow_id if active else None,
            config=self._settings.config,
            thread_length=conversation.next_seq,
            archived_entries=conversation.first_seq,
            active_context_ref=conversation.active_context_ref,
            pending_context_op_id=pending.op_id if pending else None,
            requests_kept=len(self._book.records),
        )

    @workflow.query(name="thread")
    def thread(self, *args: Any) -> ThreadPage:
        """A page of the thread (`{since_seq, limit}`); archived parts come back as a segment reference."""
        return self._thread.page(_decode(args, ThreadQuery, "thread"))

    @workflow.query(name="context")
    def context(self, *args: Any) -> Context:
        """A lane's materialized context (default: the active lane)."""
        query: ContextQuery = _decode(args, ContextQuery, "context")
        conversation = self._thread.conversation
        return conversation.lane(query.context_ref or conversation.active_context_ref)

    @workflow.query(name="requests")
    def requests(self) -> list[RequestRecord]:
        """The last requests, oldest first (a run's trace is on its run workflow: query `trace` there)."""
        return self._book.records
