"""The ReAct loop of one run: iterations, LLM calls, tool rounds, and the one terminal transition.

Per iteration: drain queued steer/inject input into the thread, call the LLM with the
projected context, then either run the requested tools and loop, or finish (unless
input arrived meanwhile, which continues the run). Every terminal path (completed,
failed, cancelled) goes through `finish`, which closes dangling tool calls, drops
queued input, records the outcome, and only then applies the deferred context
operation, so the op entry comes after every message of the run. An accepted cancel is
checked after every await, so it ends the run even when the activity it interrupted
had already completed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from contracts import (
        MAX_ITERATIONS_RESULT,
        Ack,
        InputKind,
        LLMResponse,
        RunError,
        RunInput,
        RunResult,
        RunState,
        RunStatus,
        SteerInput,
        TerminationReason,
        ToolCallRequest,
        ToolOutcome,
        TraceKind,
    )
    from contracts.errors import CANCELLED, INCOMPLETE_RESPONSE, INVALID_INPUT, UNKNOWN_TOOL
    from conversation import (
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
    from workflows.run_ledger import RunCancelledError, RunLedger
    from workflows.tool_round import ToolRound
    from workflows.trace_log import TraceLog, preview

REPEAT_NUDGE = (
    "You just repeated exactly the same tool calls as in your previous step, and their results are "
    "above. Do not repeat them: use those results, try something different, or give your final answer."
)


class RunFailedError(Exception):
    """A run-level failure (the run ends `failed`, the workflow still returns its result)."""

    def __init__(self, error_type: str, message: str) -> None:
        """Create the failure."""
        super().__init__(message)
        self.error = RunError(type=error_type, message=message)


class RunLoop:
    """One run's loop and the state it drives (ledger, queue, op slot, trace, conversation, tool round)."""

    def __init__(self, run: RunInput, request_id: str, run_id: str) -> None:
        """Set up the run's components; a given `context` becomes the thread's first entry."""
        self.input = run
        self.config = run.config
        self.request_id = request_id
        self.run_id = run_id
        self._ledger = RunLedger(max_iterations=self.config.max_iterations)
        self._queue = InputQueue()
        self._ops = OpSlot()
        self.trace = TraceLog(request_id, run_id)
        self._round = ToolRound()
        self.model = ModelCalls(
            self.config, self.config.context_policy or ContextPolicy(), request_id, run_id
        )
        self.conversation = ConversationState.new(self.config.system_prompt, run.context_ref)
        if run.context is not None:
            seed = ContextOpPayload.model_validate(
                {
                    "op_id": f"seed:{request_id}",
                    "context_ref": run.context_ref,
                    "operation": {"type": "replace", "reason": "system", "result_context": run.context},
                }
            )
            self.conversation.apply_operation(seed, workflow.now(), {"request_id": request_id})
        self.first_seq = self.conversation.next_seq
        self._dropped_inputs: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> RunResult:
        """Run to a terminal state (completed, failed or cancelled) and return the result.

        Raises:
            ApplicationError: `invalid_input`, when the worker's registry lacks a tool of the config.
        """
        self.event("request_started", data={"model": self.config.model, "query": preview(self.input.query)})
        self.append("user", self.input.query)
        self._task = asyncio.create_task(self._loop())
        try:
            await self._task
        except (asyncio.CancelledError, CancelledError, RunCancelledError):
            self._finish_cancelled()
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):  # TRY_CANCEL: the run is being cancelled
                self._finish_cancelled()
            elif isinstance(err.cause, ApplicationError) and err.cause.type == UNKNOWN_TOOL:
                raise ApplicationError(err.cause.message, type=INVALID_INPUT, non_retryable=True) from None
            else:
                self.finish("failed", error=run_error(err))
        except RunFailedError as err:
            self.finish("failed", error=err.error)
        except ApplicationError as err:
            self.finish("failed", error=run_error(err))
        self.interrupt()
        return RunResult(
            request_id=self.request_id,
            run_id=self.run_id,
            outcome=self._ledger.outcome(),
            entries=self.conversation.thread[self.first_seq :],
            first_seq=self.first_seq,
            context_ref=self.conversation.active_context_ref,
            dropped_input_ids=self._dropped_inputs,
        )

    async def _loop(self) -> None:
        previous_round: list[tuple[str, str]] | None = None
        ledger = self._ledger
        while True:
            if ledger.iteration >= self.config.max_iterations:
                self.finish("completed", reason="max_iterations")
                return
            self._drain_inputs()
            ledger.iteration += 1
            response = await self._call_llm()
            ledger.check_cancel()
            if response.tool_calls:
                self.append(
                    "assistant", response.content, tool_calls=response.tool_calls, thinking=response.thinking
                )
                await self._tool_round(response)
                ledger.check_cancel()
                this_round = [(call.name, call.arguments) for call in response.tool_calls]
                if this_round == previous_round:
                    self.append("user", REPEAT_NUDGE, refs={"source": "repeat_nudge"})
                previous_round = this_round
                continue
            if not response.content.strip() and response.finish_reason not in ("stop", "tool_calls"):
                raise RunFailedError(
                    INCOMPLETE_RESPONSE,
                    f"the model returned an empty answer (finish reason {response.finish_reason!r})",
                )
            answer = self.append("assistant", response.content, thinking=response.thinking)
            if self._queue.items:
                continue
            self._queue.seal()
            self.finish("completed", reason="final_answer", answer_seq=answer.seq)
            return

    async def _call_llm(self) -> LLMResponse:
        view = await self.model.view(self.conversation.context)
        self._ledger.check_cancel()
        index = self._ledger.llm_calls
        self._ledger.llm_calls += 1
        meta = view.meta.model_dump(mode="json")
        self.event("llm_started", data={"model": self.config.model, "messages": len(view.messages), **meta})
        self._details()
        response = await self.model.call(view, self._ledger.iteration, index)
        self._ledger.usage = self._ledger.usage.plus(response.usage)
        data: dict[str, Any] = {
            "finish_reason": response.finish_reason,
            "tool_calls": [preview(call.name) for call in response.tool_calls][:20],
            "content": preview(response.content),
            "total_tokens": response.usage.total_tokens,
        }
        self.event("llm_completed", data=data)
        return response

    async def _tool_round(self, response: LLMResponse) -> None:
        def on_event(call: ToolCall, outcome: ToolOutcome | None) -> None:
            if outcome is None:
                self._details()  # the round's statuses are filled now: name the tools being called
                self.event(
                    "tool_started",
                    call_id=call.id,
                    data={"name": call.name, "arguments": preview(call.arguments)},
                )
            else:
                summary = preview(json.dumps(outcome.for_model(), ensure_ascii=False))
                self.event(
                    "tool_completed",
                    call_id=call.id,
                    data={"name": call.name, "ok": outcome.ok, "outcome": summary},
                )

        def request_for(call: ToolCall) -> ToolCallRequest:
            return ToolCallRequest(call=call, tool_context=self.config.tool_context)

        await self._round.run(
            response.tool_calls, self.config, request_for, frozenset(response.local_tools), on_event
        )
        self._append_results()

    def _append_results(self) -> None:
        """Append the round's results in the original call order (unfinished calls get `cancelled`)."""
        for call, outcome in self._round.close():
            content = json.dumps(outcome.for_model(), ensure_ascii=False)
            self.append("tool", content, tool_call_id=call.id, name=call.name)

    # ---- what the controls and queries ask of the run -------------------------------------

    @property
    def running(self) -> bool:
        """Whether the run has not reached its terminal state."""
        return self._ledger.status == "running"

    def refuse_start(self) -> None:
        """The start input was unusable: controls answer `not_running` while the workflow fails."""
        self._ledger.status = "failed"

    def offer_input(self, kind: InputKind, payload: SteerInput, input_id: str) -> Ack:
        """Queue steer/inject input for the next iteration (`queued`), or say why not."""
        return self._queue.offer(kind, payload, self.request_id, input_id)

    def accept_cancel(self, reason: str | None) -> Ack:
        """Accept a cancel and interrupt the step in flight (`accepted`), or say why not."""
        ack = self._ledger.accept_cancel(reason)
        if ack.status == "accepted":
            self.interrupt()
        return ack

    def defer_op(self, op: ContextOpPayload) -> ContextOpPayload | None:
        """Keep a context op for the end of the run; return the op it replaces, if any."""
        return self._ops.defer(op)

    def state(self) -> RunState:
        """Status, iteration, the tool round in flight, usage and outcome (the `state` query)."""
        return RunState(
            request_id=self.request_id,
            run_id=self.run_id,
            outcome=self._ledger.outcome(),
            iteration=self._ledger.iteration,
            pending_tool_calls=self._round.statuses,
            queued_inputs=len(self._queue.items),
            active_context_ref=self.conversation.active_context_ref,
            pending_context_op=self._ops.pending,
            thread_length=self.conversation.next_seq,
        )

    # ---- terminal transition ---------------------------------------------------------------

    def finish(
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
        self.event(kinds.get(status, "request_cancelled"), data=data)
        pending = self._ops.take()
        if pending is not None:
            self.apply_op(pending)
        self._details()

    def _finish_cancelled(self) -> None:
        self.finish("cancelled", error=RunError(type=CANCELLED, message=self._ledger.cancel_message()))

    def interrupt(self) -> None:
        """Cancel the loop's in-flight step (its activity hears it with `TRY_CANCEL`)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    # ---- thread, trace and details ---------------------------------------------------------

    def append(
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
        """Append a message of this run to the active lane."""
        payload = MessagePayload(
            role=role,
            content=content,
            context_ref=self.conversation.active_context_ref,
            tool_calls=tool_calls or None,
            tool_call_id=tool_call_id,
            name=name,
            thinking=thinking,
        )
        return self.conversation.append_message(payload, workflow.now(), refs)

    def apply_op(self, op: ContextOpPayload) -> None:
        """Apply a context op now (immediately when idle, or at the end of the run)."""
        entry = self.conversation.apply_operation(op, workflow.now(), {"request_id": self.request_id})
        if entry is not None:
            data = {"type": op.operation.type, "context_ref": op.context_ref, "seq": entry.seq}
            self.event("context_op_applied", op_id=op.op_id, data=data)

    def _drain_inputs(self) -> None:
        for item in self._queue.drain():
            refs = {**item.refs, "input_id": item.input_id, "input_kind": item.kind}
            if item.source:
                refs["source"] = item.source
            entry = self.append("user", item.content, refs=refs)
            data = {"kind": item.kind, "seq": entry.seq, "content": preview(item.content)}
            self.event("input_injected", input_id=item.input_id, data=data)

    def event(
        self,
        kind: TraceKind,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Record a trace event at the current iteration."""
        self.trace.add(
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
            f"iteration {self._ledger.iteration}/{self.config.max_iterations}",
            f"model {self.config.model}",
        ]
        tools = ", ".join(status.name for status in self._round.statuses)
        if tools:
            parts.append(f"tools: {preview(tools)}")
        if self._ledger.termination:
            parts.append(f"termination: {self._ledger.termination}")
        workflow.set_current_details(" · ".join(parts))
