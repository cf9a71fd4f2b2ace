"""The `AgentSession` workflow: one long-lived conversation; each request runs as a `ReActRun` child.

The session owns the conversation (thread, every lane's context, pending op, op-id
dedupe) and the agent config. A child receives only the projected context of the
active lane and hands back the entries it appended; the session appends them, so
the thread is one ordered log across all runs. One run at a time; a deferred
context op is applied in exactly one place (`_run_request`'s `finally`), after the
child's terminal state, whatever that was.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts import (
        WORKFLOW_TYPE,
        Ack,
        CancelInput,
        RunError,
        RunInput,
        RunResult,
        SteerInput,
        Trace,
    )
    from contracts.activities import (
        EXPORT_SNAPSHOT_ACTIVITY,
        RESTORE_SNAPSHOT_ACTIVITY,
    )
    from contracts.session import (
        MAX_KEPT_REQUESTS,
        MAX_KEPT_TRACES,
        SESSION_WORKFLOW_TYPE,
        AskAccepted,
        AskInput,
        ContextQuery,
        ExportInput,
        ExportResult,
        ExportSnapshotRequest,
        RequestRecord,
        RequestRef,
        RestoreSnapshotRequest,
        SessionCarry,
        SessionInput,
        SessionStatus,
        SnapshotPayload,
        ThreadQuery,
    )
    from conversation import (
        Context,
        ContextModifyInput,
        ContextOpEntry,
        ContextOpPayload,
        ConversationState,
        Entry,
    )
    from conversation.budget import trim_to_view
    from conversation.policy import ContextPolicy, resolve_policy
    from workflows.op_rules import op_ack
    from workflows.session_compaction import SessionCompaction
    from workflows.session_config import SessionConfigControls
    from workflows.session_rules import ask_problems, effective_config, input_ack
    from workflows.validation import INVALID_INPUT


def _failure(err: BaseException) -> RunError:
    cause = err.cause if isinstance(err, ChildWorkflowError | ActivityError) else err
    if isinstance(cause, ApplicationError):
        return RunError(type=cause.type or "ApplicationError", message=cause.message)
    return RunError(type=type(cause).__name__ if cause else "error", message=str(cause or err))


# Input that does not decode fails the workflow instead of retrying its task forever.
@workflow.defn(name=SESSION_WORKFLOW_TYPE, failure_exception_types=[ValidationError])
class AgentSession(SessionConfigControls, SessionCompaction):
    """A conversation that outlives every run; reachable by its workflow id alone."""

    @workflow.init
    def __init__(self, session: SessionInput) -> None:
        """Restore carried state (after continue-as-new) or start an empty conversation."""
        carry = session.carry or SessionCarry(
            conversation=ConversationState.new(session.config.system_prompt), config=session.config
        )
        self._agent_id = session.agent_id
        self._session_policy = session.context_policy
        self._conversation = carry.conversation
        self._config = carry.config
        self._requests = carry.requests
        self._traces = carry.traces
        self._runs_started = carry.runs_started
        self._active: RequestRecord | None = None
        self._next: RunInput | None = None
        self._child_started = False

    @workflow.run
    async def run(self, session: SessionInput) -> None:
        """Serve requests one at a time; continue as new when the server suggests it, while idle."""
        if session.snapshot and session.carry is None:
            await self._restore(session.snapshot)
        while True:
            await workflow.wait_condition(
                lambda: self._next is not None or workflow.info().is_continue_as_new_suggested()
            )
            if self._next is not None:
                await self._run_request(self._next)
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            if self._next is None and self._active is None:
                workflow.continue_as_new(
                    SessionInput(
                        agent_id=self._agent_id,
                        config=self._config,
                        context_policy=self._session_policy,
                        carry=self._carry(),
                    )
                )

    def _carry(self) -> SessionCarry:
        return SessionCarry(
            conversation=self._conversation,
            config=self._config,
            requests=self._requests,
            traces=self._traces,
            runs_started=self._runs_started,
        )

    async def _restore(self, token: str) -> None:
        try:
            payload = await workflow.execute_activity(
                RESTORE_SNAPSHOT_ACTIVITY,
                RestoreSnapshotRequest(token=token),
                result_type=SnapshotPayload,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary="restore snapshot",
            )
        except ActivityError as err:
            error = _failure(err)
            raise ApplicationError(error.message, type=error.type, non_retryable=True) from err
        op = ContextOpPayload.model_validate(
            {
                "op_id": f"restore:{workflow.info().workflow_id}",
                "context_ref": payload.context_ref,
                "operation": {
                    "type": "replace",
                    "reason": "restore",
                    "result_context": payload.context,
                    "meta": {"agent_id": payload.agent_id, "exported_at": payload.exported_at.isoformat()},
                },
            }
        )
        self._conversation.apply_operation(op, workflow.now())

    async def _run_request(self, run_input: RunInput) -> None:
        record = self._active
        assert record is not None
        self._next = None
        policy = run_input.config.context_policy or ContextPolicy()
        if policy.summarization == "request_new":
            await self._compact_before_run(run_input, policy)
        context = self._conversation.context
        if policy.token_estimator == "heuristic":
            context = trim_to_view(context, policy)
        run_input = run_input.model_copy(
            update={
                "context": context,
                "context_ref": self._conversation.active_context_ref,
            }
        )
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                run_input,
                id=record.run_workflow_id,
                task_queue=workflow.info().task_queue,
                result_type=RunResult,
                static_summary=f"request {record.request_id}",
            )
            self._child_started = True
            result: RunResult = await handle
            self._take_result(record, result)
        except ChildWorkflowError as err:
            # Failed, timed out or terminated from outside: no result, no entries.
            record.status = "failed"
            record.error = _failure(err)
            record.termination_reason = "error"
        finally:
            record.finished_at = workflow.now()
            self._active, self._child_started = None, False
            pending, self._conversation.pending_context_op = self._conversation.pending_context_op, None
            if pending is not None:
                self._apply_submitted(pending, {"request_id": record.request_id})

    def _take_result(self, record: RequestRecord, result: RunResult) -> None:
        for entry in result.thread:
            if isinstance(entry, ContextOpEntry):
                self._conversation.apply_operation(entry.payload, entry.at, entry.refs)
            else:
                self._conversation.append_message(entry.payload, entry.at, entry.refs)
        record.status = result.status
        record.result = result.result
        record.error = result.error
        record.termination_reason = result.termination_reason
        record.usage = result.usage
        record.iterations = result.iterations
        if result.trace is not None:
            self._traces[record.request_id] = result.trace
            while len(self._traces) > MAX_KEPT_TRACES:
                del self._traces[next(iter(self._traces))]

    # ---- asks ------------------------------------------------------------------------------

    def _record(self, request_id: str) -> RequestRecord | None:
        return next((r for r in self._requests if r.request_id == request_id), None)

    @workflow.update(name="ask")
    async def ask(self, ask: AskInput) -> AskAccepted:
        """Start a run for this query and return at once with its ids."""
        return self._accept(ask)

    def _accept(self, ask: AskInput) -> AskAccepted:
        known = self._record(ask.request_id) if ask.request_id else None
        if known is None:
            config = effective_config(self._config, ask.overrides)
            policy = resolve_policy(ask.context_policy, self._session_policy, config.context_policy)
            config = config.model_copy(update={"context_policy": policy})
            self._runs_started += 1
            request_id = ask.request_id or str(workflow.uuid4())
            known = RequestRecord(
                request_id=request_id,
                query=ask.query,
                status="running",
                run_workflow_id=f"{workflow.info().workflow_id}-run-{self._runs_started}",
                started_at=workflow.now(),
            )
            self._requests.append(known)
            del self._requests[:-MAX_KEPT_REQUESTS]
            self._active = known
            # The context is taken when the run starts (`_run_request`): an ask that
            # creates the session is accepted before a snapshot has been restored.
            self._next = RunInput(query=ask.query, request_id=request_id, config=config)
        return AskAccepted(request_id=known.request_id, run_workflow_id=known.run_workflow_id)

    @ask.validator
    def _validate_ask(self, ask: AskInput) -> None:
        if ask.request_id and self._record(ask.request_id) is not None:
            return  # a retried ask: answered with the existing request
        if self._active is not None:
            raise ApplicationError(
                f"the session is running request {self._active.request_id}; wait for it or cancel it",
                type="busy",
            )
        problems = ask_problems(self._config, ask)
        if problems:
            raise ApplicationError("; ".join(problems), type=INVALID_INPUT)

    @workflow.update(name="await_result")
    async def await_result(self, ref: RequestRef) -> RequestRecord:
        """Wait until the request is terminal and return its record."""
        return await self._await(ref)

    async def _await(self, ref: RequestRef) -> RequestRecord:
        record = self._record(ref.request_id)
        if record is None:
            raise ApplicationError(
                f"no request {ref.request_id!r} is kept by this session", type="unknown_request"
            )
        await workflow.wait_condition(lambda: record.finished_at is not None)
        return record

    @workflow.update(name="ask_sync")
    async def ask_sync(self, ask: AskInput) -> RequestRecord:
        """Ask, then wait for the result."""
        accepted = self._accept(ask)
        return await self._await(RequestRef(request_id=accepted.request_id))

    @ask_sync.validator
    def _validate_ask_sync(self, ask: AskInput) -> None:
        self._validate_ask(ask)

    # ---- control forwarded to the active run -----------------------------------------------

    async def _running_child(self) -> RequestRecord | None:
        """The active request once its run has started; None if it finished first (or none is active)."""
        active = self._active
        if active is None:
            return None
        await workflow.wait_condition(lambda: self._child_started or self._active is not active)
        return active if self._active is active else None

    async def _forward_input(self, kind: str, payload: SteerInput) -> Ack:
        ack = input_ack(self._active, payload)
        if ack.status == "rejected":
            return ack
        active = await self._running_child()
        if active is None:
            return Ack(status="rejected", reason="idle", message="the request finished first")
        forwarded = payload.model_copy(update={"input_id": str(workflow.uuid4())})
        await workflow.get_external_workflow_handle(active.run_workflow_id).signal(kind, forwarded)
        return Ack(
            status="queued", input_id=forwarded.input_id, message=f"forwarded to {active.run_workflow_id}"
        )

    @workflow.signal(name="steer")
    async def steer_signal(self, payload: SteerInput) -> None:
        """Steer the active run (fire-and-forget)."""
        await self._forward_input("steer", payload)

    @workflow.update(name="steer")
    async def steer_update(self, payload: SteerInput) -> Ack:
        """Steer the active run; `rejected` with `idle` when there is none."""
        return await self._forward_input("steer", payload)

    @workflow.signal(name="inject")
    async def inject_signal(self, payload: SteerInput) -> None:
        """Inject input into the active run (fire-and-forget)."""
        await self._forward_input("inject", payload)

    @workflow.update(name="inject")
    async def inject_update(self, payload: SteerInput) -> Ack:
        """Inject input into the active run; `rejected` with `idle` when there is none."""
        return await self._forward_input("inject", payload)

    async def _cancel(self, payload: CancelInput) -> Ack:
        if self._active is None:
            return Ack(status="rejected", reason="idle", message="no request is running")
        active = await self._running_child()
        if active is None:
            return Ack(status="rejected", reason="idle", message="the request finished first")
        await workflow.get_external_workflow_handle(active.run_workflow_id).signal("cancel", payload)
        return Ack(status="accepted", message=f"cancelling {active.request_id}")

    @workflow.signal(name="cancel")
    async def cancel_signal(self, payload: CancelInput) -> None:
        """Cancel the active run."""
        await self._cancel(payload)

    @workflow.update(name="cancel")
    async def cancel_update(self, payload: CancelInput) -> Ack:
        """Cancel the active run and say whether there was one."""
        return await self._cancel(payload)

    def _context_modify(self, request: ContextModifyInput) -> Ack:
        ack, op = op_ack(self._conversation, request, running=self._active is not None)
        if op is not None:
            self._submit(op, ack)
        return ack

    @workflow.signal(name="context_modify")
    def context_modify_signal(self, payload: ContextModifyInput) -> None:
        """Apply a context op now when idle, else after the active run (latest wins)."""
        self._context_modify(payload)

    @workflow.update(name="context_modify")
    def context_modify_update(self, payload: ContextModifyInput) -> Ack:
        """Submit a context op and say what happened to it."""
        return self._context_modify(payload)

    # ---- export and queries ----------------------------------------------------------------

    @workflow.update(name="export")
    async def export(self, request: ExportInput) -> ExportResult:
        """A signed snapshot token of one lane's context (default: the active lane)."""
        lane = request.context_ref or self._conversation.active_context_ref
        try:
            return await workflow.execute_activity(
                EXPORT_SNAPSHOT_ACTIVITY,
                ExportSnapshotRequest(
                    agent_id=self._agent_id,
                    context_ref=lane,
                    context=self._conversation.projected(lane),
                    ttl_s=request.ttl_s,
                ),
                result_type=ExportResult,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary=f"export {lane}",
            )
        except ActivityError as err:
            error = _failure(err)
            raise ApplicationError(error.message, type=error.type) from err

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        active = self._active
        pending = self._conversation.pending_context_op
        return SessionStatus(
            agent_id=self._agent_id,
            state="running" if active else "idle",
            active_request_id=active.request_id if active else None,
            active_run_workflow_id=active.run_workflow_id if active else None,
            config=self._config,
            thread_length=len(self._conversation.thread),
            active_context_ref=self._conversation.active_context_ref,
            pending_context_op_id=pending.op_id if pending else None,
            requests_kept=len(self._requests),
        )

    @workflow.query(name="thread")
    def thread(self, query: ThreadQuery | None = None) -> list[Entry]:
        """The thread, optionally only entries with seq >= `since_seq`."""
        return self._conversation.thread[max(0, query.since_seq if query else 0) :]

    @workflow.query(name="context")
    def context(self, query: ContextQuery | None = None) -> Context:
        """The materialized context (active lane) or the projection of another lane."""
        lane = query.context_ref if query else None
        if lane is None or lane == self._conversation.active_context_ref:
            return self._conversation.context
        return self._conversation.projected(lane)

    @workflow.query(name="trace")
    def trace(self, ref: RequestRef) -> Trace:
        """The trace of a finished request (the last few are kept)."""
        trace = self._traces.get(ref.request_id)
        if trace is None:
            raise ApplicationError(
                f"no trace kept for request {ref.request_id!r} "
                "(a running request's trace is on its run workflow)"
            )
        return trace

    @workflow.query(name="requests")
    def requests(self) -> list[RequestRecord]:
        """The last requests, oldest first."""
        return self._requests
