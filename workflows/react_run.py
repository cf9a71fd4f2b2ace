"""The `ReActRun` workflow: one ReAct run (reason + act, tool calling) as one workflow execution.

Per iteration: drain queued steer/inject input into the thread, call the LLM with
the projected context, then either run the requested tools and loop, or finish
(unless input arrived meanwhile, which continues the run). Every terminal path
(completed, failed, cancelled) goes through `_finish`, which closes dangling tool
calls, drops queued input, records the outcome, and only then applies the
deferred context operation, so the op entry comes after every message of the run.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from pydantic import JsonValue, ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts import (
        MAX_ITERATIONS_RESULT,
        SCRIPTED_MODEL,
        WORKFLOW_TYPE,
        LLMRequest,
        LLMResponse,
        ResolveToolsRequest,
        RunError,
        RunInput,
        RunResult,
        RunState,
        RunStatus,
        ScriptedCall,
        TerminationReason,
        ToolCallStatus,
        ToolOutcome,
        ToolSpec,
        Trace,
        TraceKind,
        Usage,
    )
    from contracts.activities import (
        COUNT_TOKENS_ACTIVITY,
        LLM_ACTIVITY,
        RESOLVE_TOOLS_ACTIVITY,
        activity_summary,
    )
    from contracts.llm import CountTokensRequest
    from conversation import (
        Context,
        ContextOpPayload,
        ContextPolicy,
        ConversationState,
        Entry,
        MessagePayload,
        ModelView,
        Role,
        ToolCall,
        project_for_model,
    )
    from workflows.input_queue import InputQueue
    from workflows.run_controls import RunControls
    from workflows.tool_round import cancelled_outcome, execute_tool, run_round
    from workflows.trace_log import TraceLog
    from workflows.validation import INVALID_INPUT, input_problems

REPEAT_NUDGE = (
    "You just repeated exactly the same tool calls as in your previous step, and their results are "
    "above. Do not repeat them: use those results, try something different, or give your final answer."
)
LLM_HEARTBEAT_TIMEOUT = timedelta(seconds=10)


class RunFailedError(Exception):
    """A run-level failure (the run ends `failed`, the workflow still returns its result)."""

    def __init__(self, error_type: str, message: str) -> None:
        """Create the failure."""
        super().__init__(message)
        self.error = RunError(type=error_type, message=message)


def _run_error(err: BaseException) -> RunError:
    if isinstance(err, RunFailedError):
        return err.error
    if isinstance(err, ActivityError):
        cause = err.cause
        if isinstance(cause, ApplicationError):
            return RunError(type=cause.type or "ApplicationError", message=cause.message)
        if isinstance(cause, TimeoutError):
            return RunError(type="timeout", message=f"LLM call timed out ({cause.message})")
        return RunError(type="activity_error", message=str(cause or err))
    if isinstance(err, ApplicationError):
        return RunError(type=err.type or "ApplicationError", message=err.message)
    return RunError(type=type(err).__name__, message=str(err))


# Input that does not decode (e.g. a context policy out of range) fails the workflow
# with the validation error, instead of failing its workflow task forever.
@workflow.defn(name=WORKFLOW_TYPE, failure_exception_types=[ValidationError])
class ReActRun(RunControls):
    """One steerable, durable ReAct run."""

    @workflow.init
    def __init__(self, run: RunInput) -> None:
        """Set up state before any handler runs, so early signals and queries see a whole run."""
        info = workflow.info()
        self._input = run
        self._config = run.config
        self._request_id = run.request_id or str(workflow.uuid4())
        self._run_id = info.run_id
        self._status: RunStatus = "running"
        self._iteration = 0
        self._llm_calls = 0
        self._usage = Usage()
        self._result: str | None = None
        self._error: RunError | None = None
        self._termination: TerminationReason | None = None
        self._queue = InputQueue()
        self._trace = TraceLog(self._request_id, self._run_id)
        self._tool_specs: list[ToolSpec] = []
        self._round: list[ToolCallStatus] = []
        self._round_calls: list[ToolCall] = []
        self._round_outcomes: list[ToolOutcome | None] = []
        self._cancel_reason: str | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._policy = self._config.context_policy or ContextPolicy()
        self._token_counts: dict[str, int] = {}
        self._conversation = ConversationState.new(self._config.system_prompt, run.context_ref)
        if run.context is not None:
            seed = ContextOpPayload.model_validate(
                {
                    "op_id": f"seed:{self._request_id}",
                    "context_ref": run.context_ref,
                    "operation": {"type": "replace", "reason": "system", "result_context": run.context},
                }
            )
            self._conversation.apply_operation(seed, workflow.now(), {"request_id": self._request_id})
        self._first_seq = len(self._conversation.thread)

    # ---- the run ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, run: RunInput) -> RunResult:
        """Run the loop to a terminal state, apply the deferred op, and return the outcome."""
        problems = input_problems(run)
        if problems:
            raise ApplicationError("; ".join(problems), type=INVALID_INPUT, non_retryable=True)
        if self._config.tools:
            self._tool_specs = await self._resolve_tools()
        self._event("request_started", data={"model": self._config.model, "query": run.query[:200]})
        self._append("user", run.query)
        self._loop_task = asyncio.create_task(self._loop())
        try:
            await self._loop_task
        except (asyncio.CancelledError, CancelledError):
            self._finish("cancelled", error=RunError(type="cancelled", message=self._cancel_message()))
        except ActivityError as err:
            # With TRY_CANCEL a cancelled activity surfaces as an ActivityError whose cause
            # is a CancelledError: that is the run being cancelled, not failing.
            if isinstance(err.cause, CancelledError):
                self._finish("cancelled", error=RunError(type="cancelled", message=self._cancel_message()))
            else:
                self._finish("failed", error=_run_error(err))
        except (ApplicationError, RunFailedError) as err:
            self._finish("failed", error=_run_error(err))
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._result_model()

    async def _resolve_tools(self) -> list[ToolSpec]:
        try:
            # A regular activity, not a local one: local activities stall under
            # `max_cached_workflows=0` (the workflow is evicted while they run).
            return await workflow.execute_activity(
                RESOLVE_TOOLS_ACTIVITY,
                ResolveToolsRequest(names=self._config.tools),
                result_type=list[ToolSpec],
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary="resolve tools",
            )
        except (ActivityError, ApplicationError) as err:
            cause = err.cause if isinstance(err, ActivityError) else err
            message = cause.message if isinstance(cause, ApplicationError) else str(err)
            raise ApplicationError(message, type=INVALID_INPUT, non_retryable=True) from err

    async def _loop(self) -> None:
        previous_round: list[tuple[str, str]] | None = None
        while True:
            if self._iteration >= self._config.max_iterations:
                self._finish("completed", result=MAX_ITERATIONS_RESULT, reason="max_iterations")
                return
            self._drain_inputs()
            self._iteration += 1
            response = await self._call_llm()
            if response.tool_calls:
                self._append(
                    "assistant", response.content, tool_calls=response.tool_calls, thinking=response.thinking
                )
                await self._tool_round(response.tool_calls)
                this_round = [(call.name, call.arguments) for call in response.tool_calls]
                if this_round == previous_round:
                    self._append("user", REPEAT_NUDGE, refs={"source": "repeat_nudge"})
                previous_round = this_round
                continue
            if not response.content.strip() and response.finish_reason not in ("stop", "tool_calls"):
                raise RunFailedError(
                    "incomplete_response",
                    f"the model returned an empty answer (finish reason {response.finish_reason!r})",
                )
            self._append("assistant", response.content, thinking=response.thinking)
            if self._queue.items:
                continue
            self._queue.seal()
            self._finish("completed", result=response.content, reason="final_answer")
            return

    async def _model_view(self) -> ModelView:
        """What this LLM call sends: the context policy's budgeted projection of the lane."""
        context = self._conversation.context
        if self._policy.token_estimator != "exact":
            return project_for_model(context, self._policy)
        keys = [message.model_dump_json() for message in context.messages]
        missing = [m for key, m in zip(keys, context.messages, strict=True) if key not in self._token_counts]
        if missing:
            counts = await workflow.execute_activity(
                COUNT_TOKENS_ACTIVITY,
                CountTokensRequest(model=self._config.model, messages=missing),
                result_type=list[int],
                start_to_close_timeout=timedelta(seconds=30),
                summary=f"count tokens ({len(missing)} messages)",
            )
            for message, count in zip(missing, counts, strict=True):
                self._token_counts[message.model_dump_json()] = count
        return project_for_model(context, self._policy, token_counts=[self._token_counts[k] for k in keys])

    async def _call_llm(self) -> LLMResponse:
        view = await self._model_view()
        scripted = None
        if self._config.model == SCRIPTED_MODEL:
            script = self._config.script
            index = self._llm_calls
            scripted = ScriptedCall(
                index=index, length=len(script), turn=script[index] if index < len(script) else None
            )
        request = LLMRequest(
            model=self._config.model,
            system_prompt=view.system_prompt,
            messages=view.messages,
            tools=self._tool_specs,
            settings=self._config.model_settings,
            timeout_s=self._config.llm_timeout_s,
            request_id=self._request_id,
            run_id=self._run_id,
            iteration=self._iteration,
            scripted=scripted,
        )
        self._llm_calls += 1
        meta: dict[str, JsonValue] = view.meta.model_dump(mode="json")
        self._event("llm_started", data={"model": self._config.model, "messages": len(view.messages), **meta})
        self._details()
        response = await workflow.execute_activity(
            LLM_ACTIVITY,
            request,
            result_type=LLMResponse,
            start_to_close_timeout=timedelta(seconds=self._config.llm_timeout_s + 30),
            heartbeat_timeout=LLM_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=1),
                backoff_coefficient=2.0,
                maximum_interval=timedelta(seconds=60),
                maximum_attempts=self._config.llm_max_attempts,
            ),
            cancellation_type=workflow.ActivityCancellationType.TRY_CANCEL,
            summary=activity_summary(request),
        )
        self._usage = self._usage.plus(response.usage)
        self._event(
            "llm_completed",
            data={
                "finish_reason": response.finish_reason,
                "tool_calls": [call.name for call in response.tool_calls],
                "content": response.content[:200],
                "total_tokens": response.usage.total_tokens,
            },
        )
        return response

    async def _tool_round(self, calls: list[ToolCall]) -> None:
        now = workflow.now()
        self._round_calls = list(calls)
        self._round_outcomes = [None] * len(calls)
        self._round = [
            ToolCallStatus(id=call.id, name=call.name, arguments=call.arguments, started_at=now)
            for call in calls
        ]

        async def execute(index: int, call: ToolCall) -> None:
            status = self._round[index]
            status.started_at = workflow.now()
            self._event(
                "tool_started", call_id=call.id, data={"name": call.name, "arguments": call.arguments}
            )
            outcome = await execute_tool(call, self._config, self._request_id, self._run_id)
            self._round_outcomes[index] = outcome
            status.status = "ok" if outcome.ok else "error"
            status.attempts = outcome.attempts
            status.duration_ms = int((workflow.now() - status.started_at).total_seconds() * 1000)
            self._event(
                "tool_completed",
                call_id=call.id,
                data={"name": call.name, "ok": outcome.ok, "outcome": json.dumps(outcome.for_model())[:200]},
            )

        self._details()
        await run_round(calls, self._config.tool_concurrency, execute)
        self._close_round()

    def _close_round(self) -> None:
        """Append the round's results in the original call order; unfinished calls get `cancelled`."""
        for index, call in enumerate(self._round_calls):
            outcome = self._round_outcomes[index]
            if outcome is None:
                outcome = cancelled_outcome(call)
                self._round[index].status = "cancelled"
            content = json.dumps(outcome.for_model(), ensure_ascii=False)
            self._append("tool", content, tool_call_id=call.id, name=call.name)
        self._round_calls, self._round_outcomes, self._round = [], [], []

    # ---- terminal transition ---------------------------------------------------------------

    def _finish(
        self,
        status: RunStatus,
        *,
        result: str | None = None,
        reason: TerminationReason | None = None,
        error: RunError | None = None,
    ) -> None:
        """Finalize the run first, apply the deferred context op second."""
        self._close_round()
        dropped = self._queue.seal()
        self._status = status
        self._result = result
        self._error = error
        self._termination = reason or ("cancelled" if status == "cancelled" else "error")
        kind: TraceKind = "request_cancelled"
        if status == "completed":
            kind = "request_completed"
        elif status == "failed":
            kind = "request_failed"
        data: dict[str, JsonValue] = {"termination_reason": self._termination, "dropped_inputs": len(dropped)}
        if error is not None:
            data["error"] = error.model_dump(mode="json")
        self._event(kind, data=data)
        pending, self._conversation.pending_context_op = self._conversation.pending_context_op, None
        if pending is not None:
            self._apply_op(pending)
        self._details()

    def _cancel_message(self) -> str:
        if self._cancel_reason is None:
            return "the workflow was cancelled"
        return f"cancelled: {self._cancel_reason}" if self._cancel_reason else "cancelled"

    # ---- thread, trace and details ---------------------------------------------------------

    def _append(
        self,
        role: Role,
        content: str,
        *,
        tool_calls: list[ToolCall] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        thinking: str | None = None,
        refs: dict[str, str] | None = None,
    ) -> Entry:
        payload = MessagePayload(
            role=role,
            content=content,
            context_ref=self._conversation.active_context_ref,
            request_id=self._request_id,
            run_id=self._run_id,
            tool_calls=tool_calls or None,
            tool_call_id=tool_call_id,
            name=name,
            thinking=thinking,
        )
        return self._conversation.append_message(payload, workflow.now(), refs)

    def _drain_inputs(self) -> None:
        for item in self._queue.drain():
            refs = {**item.refs, "input_id": item.input_id, "input_kind": item.kind}
            if item.source:
                refs["source"] = item.source
            entry = self._append("user", item.content, refs=refs)
            self._event(
                "input_injected",
                input_id=item.input_id,
                data={"kind": item.kind, "seq": entry.seq, "content": item.content[:200]},
            )

    def _details(self) -> None:
        tools = ", ".join(status.name for status in self._round)
        parts = [
            f"status: {self._status}",
            f"iteration {self._iteration}/{self._config.max_iterations}",
            f"model {self._config.model}",
        ]
        if tools:
            parts.append(f"tools: {tools}")
        if self._termination:
            parts.append(f"termination: {self._termination}")
        workflow.set_current_details(" · ".join(parts))

    # ---- queries ---------------------------------------------------------------------------

    @workflow.query(name="state")
    def state(self) -> RunState:
        """Status, iteration, the tool round in flight, usage and outcome."""
        return RunState(
            request_id=self._request_id,
            run_id=self._run_id,
            status=self._status,
            iteration=self._iteration,
            pending_tool_calls=self._round,
            usage=self._usage,
            result=self._result,
            error=self._error,
            termination_reason=self._termination,
            queued_inputs=len(self._queue.items),
            active_context_ref=self._conversation.active_context_ref,
            pending_context_op=self._conversation.pending_context_op,
        )

    @workflow.query(name="thread")
    def thread(self) -> list[Entry]:
        """The run's whole thread (starting with the seed context, if one was given)."""
        return self._conversation.thread

    @workflow.query(name="context")
    def context(self) -> Context:
        """The materialized context of the active lane."""
        return self._conversation.context

    @workflow.query(name="trace")
    def trace(self) -> Trace:
        """The run's event trace (capped)."""
        return self._trace.snapshot()

    def _result_model(self) -> RunResult:
        return RunResult(
            request_id=self._request_id,
            run_id=self._run_id,
            status=self._status,
            result=self._result,
            termination_reason=self._termination,
            error=self._error,
            usage=self._usage,
            iterations=self._iteration,
            thread=self._conversation.thread[self._first_seq :],
            context=self._conversation.context,
            context_ref=self._conversation.active_context_ref,
            trace=self._trace.snapshot(),
        )
