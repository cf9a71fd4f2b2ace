"""The `AgentSession` workflow: one long-lived conversation; each request runs as a `ReActRun` child.

The session owns the conversation (`SessionThread`: the newest entries in memory, the
rest archived), the config (`SessionSettings`), the requests (`RequestBook`), the
pending op (`OpSlot`) and the forwarding of control input to the active run
(`RunForwarder`). A child receives the projected context of the active lane and hands
back the entries it appended; the session appends them, so the thread is one ordered
log across all runs. One run at a time; a deferred context op is applied in exactly
one place (`_run_request`'s `finally`), after the child's terminal state.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts import (
        WORKFLOW_TYPE,
        Ack,
        AgentConfig,
        CancelInput,
        ControlAck,
        Outcome,
        RunInput,
        RunResult,
        SteerInput,
        ThreadPage,
        ThreadQuery,
    )
    from contracts.activities import EXPORT_SNAPSHOT_ACTIVITY
    from contracts.compaction import CompactInput
    from contracts.decoding import PayloadProblem, decode_args
    from contracts.errors import NOTHING_TO_COMPACT, UNKNOWN_REQUEST
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
    from conversation import Context, ContextModifyInput, ContextOpPayload, ConversationState
    from workflows.compactor import Compactor
    from workflows.failures import run_error
    from workflows.op_slot import OpSlot, op_ack
    from workflows.request_book import RequestBook
    from workflows.run_forwarding import RunForwarder
    from workflows.session_config import CONFIG_CONTROLS, SessionSettings
    from workflows.session_restore import restore_snapshot
    from workflows.session_thread import ARCHIVE_CHARS, TAIL_CHARS, SessionThread

PATCH_ARCHIVE = "session-archives-thread"
"""Version 1 carried the whole thread through continue-as-new; sessions now archive it as they go."""
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
        self._ready = session.snapshot is None or session.carry is not None
        self._failure: ApplicationError | None = None

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
        while True:
            await workflow.wait_condition(lambda: self._book.next is not None or self._continue_due())
            if self._book.next is not None:
                await self._run_request(self._book.next)
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            if self._idle():  # nothing awaited since the check: no ask can slip in before this
                workflow.continue_as_new(self._next_input())

    def _continue_due(self) -> bool:
        return workflow.info().is_continue_as_new_suggested() or self._thread.tail_chars >= TAIL_CHARS

    def _archive_due(self) -> bool:
        return self._thread.tail_chars >= ARCHIVE_CHARS

    def _idle(self) -> bool:
        return self._book.next is None and self._book.active is None

    def _next_input(self) -> SessionInput:
        carry = SessionCarry(
            conversation=self._thread.conversation,
            archive=self._thread.archive,
            config=self._settings.config,
            requests=self._book.records,
            runs_started=self._book.runs_started,
            window_tokens=self._thread.window_tokens,
        )
        return SessionInput(
            agent_id=self._input.agent_id,
            config=self._settings.config,
            context_policy=self._settings.policy,
            carry=carry,
        )

    async def _run_request(self, run_input: RunInput) -> None:
        record = self._book.active
        assert record is not None and run_input.request_id is not None
        self._book.next = None
        policy = run_input.config.context_policy
        assert policy is not None
        self._thread.widen(policy)
        result: RunResult | None = None
        outcome = Outcome(status="failed", termination_reason="error")
        try:
            if policy.summarization == "request_new":
                op = await self._compactor.before_run(
                    run_input.query, run_input.request_id, policy, run_input.config
                )
                if op is not None:
                    self._thread.apply(op, {"request_id": run_input.request_id}, rebased=False)
            run_input = run_input.model_copy(
                update={
                    "context": self._thread.context_for(policy),
                    "context_ref": self._thread.conversation.active_context_ref,
                }
            )
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                run_input,
                id=record.run_workflow_id,
                task_queue=workflow.info().task_queue,
                result_type=RunResult,
                static_summary=f"{run_input.config.model}: {record.query_preview[:80]}",
            )
            self._forwarder.started(handle)
            if self._archive_due() and workflow.patched(PATCH_ARCHIVE):
                # While the run works, move the entries before it to the payload store, so that
                # continuing as new later carries little and never waits for storage.
                await self._thread.archive_all()
            finished: RunResult = await handle
            result = finished
            answer = self._thread.append_run(finished)
            outcome = finished.outcome.model_copy(update={"answer_seq": answer})
        except (ChildWorkflowError, ActivityError) as err:
            # Failed, timed out or terminated from outside: no result, no entries.
            outcome = Outcome(status="failed", termination_reason="error", error=run_error(err))
        finally:
            self._forwarder.ended(record.request_id, result)
            self._book.close(record, outcome, workflow.now())
            pending = self._ops.take()
            if pending is not None:
                self._thread.apply(pending, {"request_id": record.request_id})

    # ---- asks ------------------------------------------------------------------------------

    def _accept(self, ask: AskInput) -> AskAccepted:
        known = self._book.find(ask.request_id) if ask.request_id else None
        if known is None:
            request_id = ask.request_id or str(workflow.uuid4())
            run = self._settings.run_input(ask, request_id)
            known = self._book.open(run, workflow.info().workflow_id, workflow.now())
        return AskAccepted(request_id=known.request_id, run_workflow_id=known.run_workflow_id)

    def _check_ask(self, args: Sequence[Any]) -> None:
        ask: AskInput = _decode(args, AskInput, "ask")
        if ask.request_id and self._book.find(ask.request_id) is not None:
            return  # a retried ask: answered with the existing request
        if self._book.active is not None:
            message = (
                f"the session is running request {self._book.active.request_id}; wait for it or cancel it"
            )
            raise ApplicationError(message, type="busy")
        problem = self._settings.ask_problem(ask)
        if problem is not None:
            raise ApplicationError(problem.message, type=problem.code)

    async def _ready_to_serve(self) -> None:
        await workflow.wait_condition(lambda: self._ready)
        if self._failure is not None:
            raise self._failure

    async def _result_of(self, request_id: str) -> RequestResult:
        record = self._book.find(request_id)
        if record is None:
            raise ApplicationError(f"no request {request_id!r} is kept by this session", type=UNKNOWN_REQUEST)
        await workflow.wait_condition(lambda: record.finished_at is not None)
        answer_seq = record.outcome.answer_seq
        found = await self._thread.messages_at([answer_seq] if answer_seq is not None else [])
        text = found[answer_seq].payload.content if answer_seq in found else None
        return RequestResult(**record.model_dump(), result=text)

    @workflow.update(name="ask")
    async def ask(self, *args: Any) -> AskAccepted:
        """Start a run for this query and return at once with its ids."""
        await self._ready_to_serve()
        return self._accept(_decode(args, AskInput, "ask"))

    @ask.validator
    def _validate_ask(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.update(name="await_result")
    async def await_result(self, *args: Any) -> RequestResult:
        """Wait until the request is terminal and return its record with the answer."""
        return await self._result_of(_decode(args, RequestRef, "await_result").request_id)

    @await_result.validator
    def _validate_await_result(self, *args: Any) -> None:
        _decode(args, RequestRef, "await_result")

    @workflow.update(name="ask_sync")
    async def ask_sync(self, *args: Any) -> RequestResult:
        """Ask, then wait for the result."""
        await self._ready_to_serve()
        accepted = self._accept(_decode(args, AskInput, "ask_sync"))
        return await self._result_of(accepted.request_id)

    @ask_sync.validator
    def _validate_ask_sync(self, *args: Any) -> None:
        self._check_ask(args)

    # ---- control of the active run, context ops, compaction, config ------------------------------

    async def _control(self, name: str, args: Sequence[Any], *, wait: bool) -> Ack:
        payload = decode_args(args, _CONTROLS[name], name)
        if isinstance(payload, SteerInput):
            return await self._forwarder.forward_input(
                "inject" if name == "inject" else "steer", payload, wait=wait
            )
        if isinstance(payload, CancelInput):
            return await self._forwarder.forward_cancel(payload, wait=wait)
        if isinstance(payload, ContextModifyInput):
            ack, op = op_ack(self._thread.conversation, payload, running=self._book.active is not None)
            self._submit(op, ack)
            return ack
        if isinstance(payload, CompactInput):
            return await self._compact(payload)
        return await self._settings.apply(name, payload)

    async def _signal(self, name: str, args: Sequence[Any]) -> None:
        try:
            ack = await self._control(name, args, wait=False)
        except PayloadProblem as problem:
            workflow.logger.warning("dropped a %s signal: %s", name, problem)
            return
        if ack.status == "rejected":
            workflow.logger.info("%s rejected: %s (%s)", name, ack.reason, ack.message)

    def _submit(self, op: ContextOpPayload | None, ack: Ack) -> None:
        """Apply an accepted op now (`applied`) or keep it for the end of the run (`deferred`)."""
        if op is not None and ack.status == "applied":
            self._thread.apply(op, {})
        elif op is not None and ack.status == "deferred":
            self._ops.defer(op)

    async def _compact(self, request: CompactInput) -> Ack:
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
        ack = Ack(status="deferred" if self._book.active is not None else "applied", op_id=op_id)
        self._submit(op, ack)
        return ack

    @workflow.signal(name="steer")
    async def steer_signal(self, *args: Any) -> None:
        """Steer the active run (fire-and-forget)."""
        await self._signal("steer", args)

    @workflow.update(name="steer")
    async def steer_update(self, *args: Any) -> Ack:
        """Steer the active run: the run's own `Ack`, or `rejected` with `idle` when there is none."""
        return await self._control("steer", args, wait=True)

    @steer_update.validator
    def _validate_steer(self, *args: Any) -> None:
        _decode(args, SteerInput, "steer")

    @workflow.signal(name="inject")
    async def inject_signal(self, *args: Any) -> None:
        """Inject input into the active run (fire-and-forget)."""
        await self._signal("inject", args)

    @workflow.update(name="inject")
    async def inject_update(self, *args: Any) -> Ack:
        """Inject input into the active run: the run's own `Ack`, or `rejected` with `idle`."""
        return await self._control("inject", args, wait=True)

    @inject_update.validator
    def _validate_inject(self, *args: Any) -> None:
        _decode(args, SteerInput, "inject")

    @workflow.signal(name="cancel")
    async def cancel_signal(self, *args: Any) -> None:
        """Cancel the active run."""
        await self._signal("cancel", args)

    @workflow.update(name="cancel")
    async def cancel_update(self, *args: Any) -> Ack:
        """Cancel the active run: `accepted` only if it ends `cancelled`."""
        return await self._control("cancel", args, wait=True)

    @cancel_update.validator
    def _validate_cancel(self, *args: Any) -> None:
        _decode(args, CancelInput, "cancel")

    @workflow.signal(name="context_modify")
    async def context_modify_signal(self, *args: Any) -> None:
        """Apply a context op now when idle, else after the active run (latest wins)."""
        await self._signal("context_modify", args)

    @workflow.update(name="context_modify")
    async def context_modify_update(self, *args: Any) -> Ack:
        """Submit a context op and say what happened to it."""
        return await self._control("context_modify", args, wait=True)

    @context_modify_update.validator
    def _validate_context_modify(self, *args: Any) -> None:
        _decode(args, ContextModifyInput, "context_modify")

    @workflow.signal(name="compact")
    async def compact_signal(self, *args: Any) -> None:
        """Compact the active lane (deferred while a run is active)."""
        await self._signal("compact", args)

    @workflow.update(name="compact")
    async def compact_update(self, *args: Any) -> Ack:
        """Compact the active lane and say whether it was applied, deferred or not needed."""
        return await self._control("compact", args, wait=True)

    @compact_update.validator
    def _validate_compact(self, *args: Any) -> None:
        _decode(args, CompactInput, "compact")

    @workflow.signal(name="control_ack")
    def control_ack(self, *args: Any) -> None:
        """A run's answer to input or a cancel this session forwarded (internal)."""
        try:
            self._forwarder.answer(decode_args(args, ControlAck, "control_ack", required=True))
        except PayloadProblem as problem:
            workflow.logger.warning("dropped a control_ack signal: %s", problem)

    @workflow.signal(name="set_system_prompt")
    async def set_system_prompt_signal(self, *args: Any) -> None:
        """Set the base system prompt for the next run."""
        await self._signal("set_system_prompt", args)

    @workflow.update(name="set_system_prompt")
    async def set_system_prompt_update(self, *args: Any) -> Ack:
        """Set the base system prompt for the next run."""
        return await self._control("set_system_prompt", args, wait=True)

    @set_system_prompt_update.validator
    def _validate_set_system_prompt(self, *args: Any) -> None:
        _decode(args, CONFIG_CONTROLS["set_system_prompt"], "set_system_prompt")

    @workflow.signal(name="register_tool")
    async def register_tool_signal(self, *args: Any) -> None:
        """Offer a tool of the worker's registry to the next run."""
        await self._signal("register_tool", args)

    @workflow.update(name="register_tool")
    async def register_tool_update(self, *args: Any) -> Ack:
        """Offer a tool to the next run; `rejected` when the worker has no such tool."""
        return await self._control("register_tool", args, wait=True)

    @register_tool_update.validator
    def _validate_register_tool(self, *args: Any) -> None:
        _decode(args, CONFIG_CONTROLS["register_tool"], "register_tool")

    @workflow.signal(name="unregister_tool")
    async def unregister_tool_signal(self, *args: Any) -> None:
        """Stop offering a tool from the next run on."""
        await self._signal("unregister_tool", args)

    @workflow.update(name="unregister_tool")
    async def unregister_tool_update(self, *args: Any) -> Ack:
        """Stop offering a tool from the next run on."""
        return await self._control("unregister_tool", args, wait=True)

    @unregister_tool_update.validator
    def _validate_unregister_tool(self, *args: Any) -> None:
        _decode(args, CONFIG_CONTROLS["unregister_tool"], "unregister_tool")

    @workflow.signal(name="set_tool_context")
    async def set_tool_context_signal(self, *args: Any) -> None:
        """Set what tools taking `tool_context` receive, from the next run on."""
        await self._signal("set_tool_context", args)

    @workflow.update(name="set_tool_context")
    async def set_tool_context_update(self, *args: Any) -> Ack:
        """Set what tools taking `tool_context` receive, from the next run on."""
        return await self._control("set_tool_context", args, wait=True)

    @set_tool_context_update.validator
    def _validate_set_tool_context(self, *args: Any) -> None:
        _decode(args, CONFIG_CONTROLS["set_tool_context"], "set_tool_context")

    @workflow.signal(name="set_model")
    async def set_model_signal(self, *args: Any) -> None:
        """Set the model for the next run."""
        await self._signal("set_model", args)

    @workflow.update(name="set_model")
    async def set_model_update(self, *args: Any) -> Ack:
        """Set the model for the next run."""
        return await self._control("set_model", args, wait=True)

    @set_model_update.validator
    def _validate_set_model(self, *args: Any) -> None:
        _decode(args, CONFIG_CONTROLS["set_model"], "set_model")

    # ---- export and queries ----------------------------------------------------------------

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

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        active, conversation = self._book.active, self._thread.conversation
        pending = self._ops.pending
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


_CONTROLS: dict[str, type[BaseModel]] = {
    "steer": SteerInput,
    "inject": SteerInput,
    "cancel": CancelInput,
    "context_modify": ContextModifyInput,
    "compact": CompactInput,
    **CONFIG_CONTROLS,
}
