"""The `ReActRun` workflow: one ReAct run (reason + act, tool calling) as one workflow execution.

Per iteration: drain queued steer/inject input into the thread, call the LLM with
the projected context, then either run the requested tools and loop, or finish
(unless input arrived meanwhile, which continues the run). Every terminal path
(completed, failed, cancelled) goes through `_finish`, which closes dangling tool
calls, drops queued input, records the outcome, and only then applies the deferred
context operation, so the op entry comes after every message of the run.

The class is thin: state lives in components it composes (the ledger, the input
queue, the op slot, the trace, the conversation, the model calls, the tool round)
and every handler is a one-line delegation.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from contracts import (
        MAX_ITERATIONS_RESULT,
        WORKFLOW_TYPE,
        Ack,
        AgentConfig,
        LLMResponse,
        ResolveToolsRequest,
        RunError,
        RunInput,
        RunResult,
        RunState,
        RunStatus,
        TerminationReason,
        ThreadPage,
        ThreadQuery,
        ToolCallRequest,
        ToolOutcome,
        Trace,
        TraceKind,
    )
    from contracts.activities import RESOLVE_TOOLS_ACTIVITY
    from contracts.decoding import PayloadProblem, decode_args
    from contracts.errors import CANCELLED, INCOMPLETE_RESPONSE, INVALID_INPUT, UNKNOWN_TOOL
    from contracts.thread import page_of
    from conversation import (
        Context,
        ContextOpPayload,
        ContextPolicy,
        ConversationState,
        Entry,
        MessagePayload,
        Role,
        ToolCall,
    )
    from workflows.failures import run_error
    from workflows.input_queue import InputQueue
    from workflows.model_calls import ModelCalls
    from workflows.op_slot import OpSlot
    from workflows.run_controls import RunControls
    from workflows.run_ledger import RunCancelledError, RunLedger
    from workflows.tool_round import ToolRound
    from workflows.trace_log import TraceLog, preview
    from workflows.validation import input_problems

REPEAT_NUDGE = (
    "You just repeated exactly the same tool calls as in your previous step, and their results are "
    "above. Do not repeat them: use those results, try something different, or give your final answer."
)
PATCH_TOOLS_IN_LLM_CALL = "llm-call-resolves-tools"
"""Version 1 resolved tools in an activity of its own; runs now let the LLM activity do it."""
_PLACEHOLDER = RunInput(query="", config=AgentConfig(model="none"))


class RunFailedError(Exception):
    """A run-level failure (the run ends `failed`, the workflow still returns its result)."""

    def __init__(self, error_type: str, message: str) -> None:
        """Create the failure."""
        super().__init__(message)
        self.error = RunError(type=error_type, message=message)


@workflow.defn(name=WORKFLOW_TYPE)
class ReActRun:
    """One steerable, durable ReAct run."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """Set up state before any handler runs, so early signals and queries see a whole run."""
        self._problem: PayloadProblem | None = None
        try:
            run = decode_args(args, RunInput, "ReActRun input", required=True)
        except PayloadProblem as problem:
            run, self._problem = _PLACEHOLDER, problem
        info = workflow.info()
        self._input = run
        self._config = run.config
        self._request_id = run.request_id or str(workflow.uuid4())
        self._run_id = info.run_id
        self._ledger = RunLedger(max_iterations=self._config.max_iterations)
        self._queue = InputQueue()
        self._ops = OpSlot()
        self._trace = TraceLog(self._request_id, self._run_id)
        self._round = ToolRound()
        policy = self._config.context_policy or ContextPolicy()
        self._model = ModelCalls(self._config, policy, self._request_id, self._run_id)
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
        self._first_seq = self._conversation.next_seq
        self._dropped_inputs: list[str] = []
        self._loop_task: asyncio.Task[None] | None = None
        self._controls = RunControls(
            request_id=self._request_id,
            ledger=self._ledger,
            queue=self._queue,
            ops=self._ops,
            conversation=self._conversation,
            event=self._event,
            apply_op=self._apply_op,
            interrupt=self._interrupt,
        )
        if self._problem is not None:
            self._ledger.status = "failed"

    # ---- the run ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, *args: Any) -> RunResult:
        """Run the loop to a terminal state, apply the deferred op, and return the outcome."""
        if self._problem is not None:
            raise ApplicationError(self._problem.message, type=self._problem.code, non_retryable=True)
        problems = input_problems(self._input)
        if problems:
            raise ApplicationError("; ".join(problems), type=INVALID_INPUT, non_retryable=True)
        if self._config.tools and not workflow.patched(PATCH_TOOLS_IN_LLM_CALL):
            await self._resolve_tools_v1()
        self._event(
            "request_started", data={"model": self._config.model, "query": preview(self._input.query)}
        )
        self._append("user", self._input.query)
        self._loop_task = asyncio.create_task(self._loop())
        try:
            await self._loop_task
        except (asyncio.CancelledError, CancelledError, RunCancelledError):
            self._finish_cancelled()
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):  # TRY_CANCEL: the run is being cancelled
                self._finish_cancelled()
            elif isinstance(err.cause, ApplicationError) and err.cause.type == UNKNOWN_TOOL:
                raise ApplicationError(err.cause.message, type=INVALID_INPUT, non_retryable=True) from None
            else:
                self._finish("failed", error=run_error(err))
        except RunFailedError as err:
            self._finish("failed", error=err.error)
        except ApplicationError as err:
            self._finish("failed", error=run_error(err))
        self._interrupt()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return RunResult(
            request_id=self._request_id,
            run_id=self._run_id,
            outcome=self._ledger.outcome(),
            entries=self._conversation.thread[self._first_seq :],
            first_seq=self._first_seq,
            context_ref=self._conversation.active_context_ref,
            dropped_input_ids=self._dropped_inputs,
        )

    async def _resolve_tools_v1(self) -> None:
        """Replays of version-1 histories only: the tool check was an activity of its own."""
        try:
            await workflow.execute_activity(
                RESOLVE_TOOLS_ACTIVITY,
                ResolveToolsRequest(names=self._config.tools),
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary="resolve tools",
            )
        except ActivityError as err:
            raise ApplicationError(run_error(err).message, type=INVALID_INPUT, non_retryable=True) from None

    async def _loop(self) -> None:
        previous_round: list[tuple[str, str]] | None = None
        ledger = self._ledger
        while True:
            if ledger.iteration >= self._config.max_iterations:
                self._finish("completed", reason="max_iterations")
                return
            self._drain_inputs()
            ledger.iteration += 1
            response = await self._call_llm()
            ledger.check_cancel()
            if response.tool_calls:
                self._append(
                    "assistant", response.content, tool_calls=response.tool_calls, thinking=response.thinking
                )
                await self._tool_round(response)
                ledger.check_cancel()
                this_round = [(call.name, call.arguments) for call in response.tool_calls]
                if this_round == previous_round:
                    self._append("user", REPEAT_NUDGE, refs={"source": "repeat_nudge"})
                previous_round = this_round
                continue
            if not response.content.strip() and response.finish_reason not in ("stop", "tool_calls"):
                raise RunFailedError(
                    INCOMPLETE_RESPONSE,
                    f"the model returned an empty answer (finish reason {response.finish_reason!r})",
                )
            answer = self._append("assistant", response.content, thinking=response.thinking)
            if self._queue.items:
                continue
            self._queue.seal()
            self._finish("completed", reason="final_answer", answer_seq=answer.seq)
            return

    async def _call_llm(self) -> LLMResponse:
        view = await self._model.view(self._conversation.context)
        self._ledger.check_cancel()
        index = self._ledger.llm_calls
        self._ledger.llm_calls += 1
        meta = view.meta.model_dump(mode="json")
        self._event("llm_started", data={"model": self._config.model, "messages": len(view.messages), **meta})
        self._details()
        response = await self._model.call(view, self._ledger.iteration, index)
        self._ledger.usage = self._ledger.usage.plus(response.usage)
        data: dict[str, Any] = {
            "finish_reason": response.finish_reason,
            "tool_calls": [preview(call.name) for call in response.tool_calls][:20],
            "content": preview(response.content),
            "total_tokens": response.usage.total_tokens,
        }
        self._event("llm_completed", data=data)
        return response

    async def _tool_round(self, response: LLMResponse) -> None:
        def on_event(call: ToolCall, outcome: ToolOutcome | None) -> None:
            if outcome is None:
                self._event(
                    "tool_started",
                    call_id=call.id,
                    data={"name": call.name, "arguments": preview(call.arguments)},
                )
            else:
                summary = preview(json.dumps(outcome.for_model(), ensure_ascii=False))
                self._event(
                    "tool_completed",
                    call_id=call.id,
                    data={"name": call.name, "ok": outcome.ok, "outcome": summary},
                )

        def request_for(call: ToolCall) -> ToolCallRequest:
            return ToolCallRequest(call=call, tool_context=self._config.tool_context)

        self._details()
        await self._round.run(
            response.tool_calls, self._config, request_for, frozenset(response.local_tools), on_event
        )
        self._append_results()

    def _append_results(self) -> None:
        """Append the round's results in the original call order (unfinished calls get `cancelled`)."""
        for call, outcome in self._round.close():
            content = json.dumps(outcome.for_model(), ensure_ascii=False)
            self._append("tool", content, tool_call_id=call.id, name=call.name)

    # ---- terminal transition ---------------------------------------------------------------

    def _finish(
        self,
        status: RunStatus,
        *,
        reason: TerminationReason | None = None,
        error: RunError | None = None,
        answer_seq: int | None = None,
    ) -> None:
        """Finalize the run first, apply the deferred context op second."""
        self._append_results()
        self._dropped_inputs = [item.input_id for item in self._queue.seal()]
        self._ledger.finish(status, reason=reason, error=error, answer_seq=answer_seq)
        kinds: dict[RunStatus, TraceKind] = {"completed": "request_completed", "failed": "request_failed"}
        data: dict[str, Any] = {
            "termination_reason": self._ledger.termination,
            "dropped_inputs": len(self._dropped_inputs),
        }
        if reason == "max_iterations":
            data["result"] = MAX_ITERATIONS_RESULT
        if error is not None:
            data["error"] = {"type": error.type, "message": preview(error.message)}
        self._event(kinds.get(status, "request_cancelled"), data=data)
        pending = self._ops.take()
        if pending is not None:
            self._apply_op(pending)
        self._details()

    def _finish_cancelled(self) -> None:
        self._finish("cancelled", error=RunError(type=CANCELLED, message=self._ledger.cancel_message()))

    def _interrupt(self) -> None:
        if self._loop_task is not None and not self._loop_task.done():
            self._loop_task.cancel()

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
            tool_calls=tool_calls or None,
            tool_call_id=tool_call_id,
            name=name,
            thinking=thinking,
        )
        return self._conversation.append_message(payload, workflow.now(), refs)

    def _apply_op(self, op: ContextOpPayload) -> None:
        entry = self._conversation.apply_operation(op, workflow.now(), {"request_id": self._request_id})
        if entry is not None:
            data = {"type": op.operation.type, "context_ref": op.context_ref, "seq": entry.seq}
            self._event("context_op_applied", op_id=op.op_id, data=data)

    def _drain_inputs(self) -> None:
        for item in self._queue.drain():
            refs = {**item.refs, "input_id": item.input_id, "input_kind": item.kind}
            if item.source:
                refs["source"] = item.source
            entry = self._append("user", item.content, refs=refs)
            data = {"kind": item.kind, "seq": entry.seq, "content": preview(item.content)}
            self._event("input_injected", input_id=item.input_id, data=data)

    def _event(
        self,
        kind: TraceKind,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self._trace.add(
            kind,
            workflow.now(),
            self._ledger.iteration,
            call_id=call_id,
            input_id=input_id,
            op_id=op_id,
            data=data,
        )

    def _details(self) -> None:
        parts = [
            f"status: {self._ledger.status}",
            f"iteration {self._ledger.iteration}/{self._config.max_iterations}",
            f"model {self._config.model}",
        ]
        tools = ", ".join(status.name for status in self._round.statuses)
        if tools:
            parts.append(f"tools: {preview(tools)}")
        if self._ledger.termination:
            parts.append(f"termination: {self._ledger.termination}")
        workflow.set_current_details(" · ".join(parts))

    # ---- handlers: one-line delegations ------------------------------------------------------

    @workflow.signal(name="steer")
    async def steer_signal(self, *args: Any) -> None:
        """Queue user-style steering input (fire-and-forget)."""
        await self._controls.signal("steer", args)

    @workflow.update(name="steer")
    def steer_update(self, *args: Any) -> Ack:
        """Queue steering input and say whether it was queued."""
        return self._controls.update("steer", args)

    @steer_update.validator
    def _validate_steer(self, *args: Any) -> None:
        self._controls.validate("steer", args)

    @workflow.signal(name="inject")
    async def inject_signal(self, *args: Any) -> None:
        """Queue user-style injected input (fire-and-forget)."""
        await self._controls.signal("inject", args)

    @workflow.update(name="inject")
    def inject_update(self, *args: Any) -> Ack:
        """Queue injected input and say whether it was queued."""
        return self._controls.update("inject", args)

    @inject_update.validator
    def _validate_inject(self, *args: Any) -> None:
        self._controls.validate("inject", args)

    @workflow.signal(name="context_modify")
    async def context_modify_signal(self, *args: Any) -> None:
        """Submit a context operation (deferred while the run is active; latest wins)."""
        await self._controls.signal("context_modify", args)

    @workflow.update(name="context_modify")
    def context_modify_update(self, *args: Any) -> Ack:
        """Submit a context operation and say what happened to it."""
        return self._controls.update("context_modify", args)

    @context_modify_update.validator
    def _validate_context_modify(self, *args: Any) -> None:
        self._controls.validate("context_modify", args)

    @workflow.signal(name="cancel")
    async def cancel_signal(self, *args: Any) -> None:
        """Cancel the run (the deferred context op is still applied)."""
        await self._controls.signal("cancel", args)

    @workflow.update(name="cancel")
    def cancel_update(self, *args: Any) -> Ack:
        """Cancel the run: `accepted` always ends it `cancelled`; `rejected` when it already ended."""
        return self._controls.update("cancel", args)

    @cancel_update.validator
    def _validate_cancel(self, *args: Any) -> None:
        self._controls.validate("cancel", args)

    # ---- queries ---------------------------------------------------------------------------

    @workflow.query(name="state")
    def state(self) -> RunState:
        """Status, iteration, the tool round in flight, usage and outcome."""
        return RunState(
            request_id=self._request_id,
            run_id=self._run_id,
            outcome=self._ledger.outcome(),
            iteration=self._ledger.iteration,
            pending_tool_calls=self._round.statuses,
            queued_inputs=len(self._queue.items),
            active_context_ref=self._conversation.active_context_ref,
            pending_context_op=self._ops.pending,
            thread_length=self._conversation.next_seq,
        )

    @workflow.query(name="thread")
    def thread(self, *args: Any) -> ThreadPage:
        """A page of the run's thread (`{since_seq, limit}`; it starts with the seed context, if any)."""
        query = _decode_query(args)
        return page_of(self._conversation.thread, 0, query)

    @workflow.query(name="context")
    def context(self) -> Context:
        """The materialized context of the active lane."""
        return self._conversation.context

    @workflow.query(name="trace")
    def trace(self) -> Trace:
        """The run's event trace (bounded; see `workflows.trace_log`)."""
        return self._trace.snapshot()


def _decode_query(args: Any) -> ThreadQuery:
    try:
        return decode_args(args, ThreadQuery, "thread")
    except PayloadProblem as problem:
        raise ApplicationError(problem.message, type=problem.code) from None
