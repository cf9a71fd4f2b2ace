"""A session's requests: running each as a `ReActRun` child, and answering awaits (asks: `SessionAsks`).

One run at a time. A child receives the projected context of the active lane and
hands back the entries it appended; the session appends them, so the thread is one
ordered log across all runs. A deferred context op is applied in exactly one place
(`run`'s `finally`), after the child's terminal state, whatever it was; then, for a
request rolled back (`on_busy: rollback`) that ended `cancelled`, the op that puts its
lane back as it stood when the request started.
"""

from __future__ import annotations

from datetime import UTC

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

from contracts import WORKFLOW_TYPE, Outcome, RunResult, Usage
from contracts.activities import RECORD_USAGE
from contracts.effects import AgentState
from contracts.errors import UNKNOWN_REQUEST
from contracts.memory import workflow_owner
from contracts.schedules import SCHEDULE_REF
from contracts.session import RequestRecord, RequestResult
from contracts.usage import USAGE_RECORD_PATCH, UsageRecord
from contracts.web_ui import static_details, static_summary
from contracts.webhooks import WebhookBody, WebhookData, WebhookTarget, answer_part
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.op_slot import OpSlot
from workflows.session import thread_memo
from workflows.session.asks import rollback_op
from workflows.session.compactor import Compactor
from workflows.session.request_book import RequestBook
from workflows.session.run_forwarding import RunForwarder
from workflows.session.settings import SessionSettings
from workflows.session.thread import ARCHIVE_CHARS, SessionThread
from workflows.session.usage_rows import UsageRows
from workflows.webhook_child import start_delivery

PATCH_ARCHIVE = "session-archives-thread"
"""Version 1 carried the whole thread through continue-as-new; sessions now archive it as they go."""
PATCH_WEBHOOKS = "request-webhooks"
"""A request asked with a `webhook_url` starts its webhook's delivery (a child) when it ends."""
ENDED = ("completed", "failed", "cancelled")
PATCH_RUN_END_MEMO = "run-end-memo"
"""A request's end now writes the session's memo (`last_request`): a command in that workflow task.

Without a command, a worker that replays the session (no cache, or after a restart) folds the
task that applied the run's end into the next one, where an `ask` Update is validated before the
run's end is applied: every ask was refused `busy` until some other event came.
"""
PATCH_USAGE_RECORD = USAGE_RECORD_PATCH
"""A request's end now records its usage (`record_usage`, an activity) after everything else it does."""
PATCH_USAGE_ASIDE = "usage-rows-aside"
"""A request's usage row is written aside (`UsageRows`): the loop no longer waits for it.

While the loop waited for the row, a client that asked again as soon as each answer came
found the session busy every time it looked, and the session never continued as new.
"""


class SessionRequests:
    """Runs the session's requests, one at a time, against the session's thread."""

    def __init__(
        self,
        book: RequestBook,
        thread: SessionThread,
        settings: SessionSettings,
        ops: OpSlot,
        forwarder: RunForwarder,
        compactor: Compactor,
        *,
        usage: Usage,
        agent_state: AgentState,
        usage_rows: UsageRows,
        agent_id: str = "",
    ) -> None:
        """Bind the session's components; `usage` and `agent_state` are the carried ones."""
        self._agent_id = agent_id
        self._book = book
        self._thread = thread
        self._settings = settings
        self._ops = ops
        self._forwarder = forwarder
        self._compactor = compactor
        self._usage = usage
        self._agent_state: AgentState = agent_state
        self._usage_rows = usage_rows

    @property
    def usage(self) -> Usage:
        """The session's usage: its requests' outcomes summed (carried across continue-as-new)."""
        return self._usage

    @property
    def agent_state(self) -> AgentState:
        """The agent state the next run starts from (the last run's, after its tools' effects); carried."""
        return self._agent_state

    async def result_of(self, request_id: str) -> RequestResult:
        """The request's record once terminal, with its answer's text (from the thread, or its archive)."""
        record = self._book.find(request_id)
        if record is None:
            raise ApplicationError(f"no request {request_id!r} is kept by this session", type=UNKNOWN_REQUEST)
        await workflow.wait_condition(lambda: record.finished_at is not None)
        answer_seq = record.outcome.answer_seq
        found = await self._thread.messages_at([answer_seq] if answer_seq is not None else [])
        text = found[answer_seq].payload.content if answer_seq in found else None
        return RequestResult(**record.model_dump(), result=text)

    async def run_next(self) -> None:
        """Run the active request's child to its end; apply the deferred op after it, however it ended."""
        run_input = self._book.take_next()
        record = self._book.active
        assert record is not None and run_input is not None and run_input.request_id is not None
        lane = self._thread.active_context_ref
        before = self._thread.lane_as_it_stands(lane)  # what a rollback puts back
        policy = run_input.config.context_policy
        assert policy is not None
        self._thread.widen(policy)
        result: RunResult | None = None
        outcome = Outcome(status="failed", termination_reason="error")
        workflow.set_current_details(f"running {record.run_workflow_id}: {record.query_preview[:80]}")
        try:
            if policy.summarization == "request_new":
                op = await self._compactor.before_run(
                    run_input.query, run_input.request_id, policy, run_input.config
                )
                if op is not None:
                    self._thread.apply(op, {"request_id": run_input.request_id}, rebased=False)
            context = self._thread.context_for(policy)
            if run_input.agent_version is not None:  # a version's prompt is the agent's, whatever the lane's
                context = context.model_copy(update={"system_prompt": run_input.config.system_prompt})
            run_input = run_input.model_copy(
                update={
                    "context": context,
                    "context_ref": self._thread.active_context_ref,
                    "agent_state": self._agent_state,
                    "session_usage": self._usage if run_input.config.usage_limits is not None else None,
                    "webhook": self._webhook_target(record),
                }
            )
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                run_input,
                id=record.run_workflow_id,
                task_queue=workflow.info().task_queue,
                result_type=RunResult,
                static_summary=static_summary(
                    run_input.config, record.query_preview, version=record.agent_version
                ),
                static_details=static_details(
                    run_input.config, record.query_preview, record.request_id, version=record.agent_version
                ),
            )
            self._forwarder.started(handle)
            if self._thread.tail_chars >= ARCHIVE_CHARS and workflow.patched(PATCH_ARCHIVE):
                # While the run works, move the entries before it to the payload store, so that
                # continuing as new later carries little and never waits for storage.
                await self._thread.archive_all()
            finished: RunResult = await handle
            result = finished
            if finished.agent_state is not None:
                self._agent_state = finished.agent_state
            outcome = finished.outcome.model_copy(update={"answer_seq": self._thread.append_run(finished)})
        except (ChildWorkflowError, ActivityError) as err:
            # Failed, timed out or terminated from outside: no result, no entries.
            outcome = Outcome(status="failed", termination_reason="error", error=run_error(err))
        finally:
            self._forwarder.ended(record.request_id, result)
            self._book.close(record, outcome, workflow.now())
            if workflow.patched(PATCH_RUN_END_MEMO):
                thread_memo.request_ended(record, outcome.status)
            self._usage = self._usage.plus(outcome.usage)
            if self._book.active is None:  # else a waiting request starts now
                set_idle_details(self._book.runs_started, record.query_preview, outcome.status)
            pending = self._ops.take()
            if pending is not None:
                self._thread.apply(pending, {"request_id": record.request_id})
            if self._book.take_roll_back(record.request_id) and outcome.status == "cancelled":
                op = rollback_op(record.request_id, lane, before)
                self._thread.apply(op, {"request_id": record.request_id}, rebased=False)
            if (
                record.webhook_url is not None
                and outcome.status in ENDED
                and workflow.patched(PATCH_WEBHOOKS)
            ):
                await self._webhook(record, outcome, result)
            if workflow.patched(PATCH_USAGE_ASIDE):
                self._usage_rows.write(self._usage_row(record, outcome))
            elif workflow.patched(PATCH_USAGE_RECORD):
                await self._record_usage(record, outcome)

    async def _record_usage(self, record: RequestRecord, outcome: Outcome) -> None:
        """Write the ended request's usage row, as sessions before `PATCH_USAGE_ASIDE` did: waiting for it.

        A store that does not answer after the activity's retries costs the row, never the session.
        """
        try:
            await call_activity(RECORD_USAGE, self._usage_row(record, outcome))
        except ActivityError as err:
            workflow.logger.warning("the usage of %s was not recorded: %s", record.request_id, err)

    def _usage_row(self, record: RequestRecord, outcome: Outcome) -> UsageRecord:
        """The ended request's usage row (the store keys it by session and request id)."""
        assert record.finished_at is not None
        session_id = workflow.info().workflow_id
        principal, _ = workflow_owner(session_id)
        ended = record.finished_at.astimezone(UTC)
        usage = outcome.usage
        return UsageRecord(
            session_id=session_id,
            request_id=record.request_id,
            principal=principal,
            agent=self._agent_id,
            version=record.agent_version,
            status=outcome.status,
            day=ended.date().isoformat(),
            ended_at=ended.timestamp(),
            latency_ms=max(0, round((record.finished_at - record.started_at).total_seconds() * 1000)),
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=max(0.0, usage.cost_usd),
        )

    def _webhook_target(self, record: RequestRecord) -> WebhookTarget | None:
        """Where the request's run sends its `approval.waiting` webhooks (its ask's `webhook_url`)."""
        if record.webhook_url is None:
            return None
        return WebhookTarget(
            url=record.webhook_url, agent=self._agent_id, thread_id=workflow.info().workflow_id
        )

    async def _webhook(self, record: RequestRecord, outcome: Outcome, result: RunResult | None) -> None:
        """Start delivering the request's end to its webhook (the session does not wait for it)."""
        answer, cut = answer_part(result.answer if result is not None else None)
        data = WebhookData.of_session(
            workflow.info().workflow_id,
            agent=self._agent_id,
            request_id=record.request_id,
            status=outcome.status,
            answer=answer,
            answer_truncated=cut,
            schedule_id=record.refs.get(SCHEDULE_REF),
            error=outcome.error.message[:1_000] if outcome.error is not None else None,
            agent_version=record.agent_version,
        )
        body = WebhookBody(type=f"request.{outcome.status}", timestamp=workflow.now(), data=data)  # pyright: ignore[reportArgumentType]
        assert record.webhook_url is not None
        await start_delivery(record.webhook_url, record.run_workflow_id.rpartition("-run-")[2], body)


def set_idle_details(runs: int, last_query: str | None = None, last_status: str | None = None) -> None:
    """The session's current details while it waits for an ask (no command: replay-safe)."""
    last = f" · last: {last_query[:60]!r} {last_status}" if last_query is not None else ""
    workflow.set_current_details(f"idle · {runs} runs started{last}")
