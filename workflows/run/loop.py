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
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from contracts import (
    MAX_ITERATIONS_RESULT,
    Ack,
    InputKind,
    RunError,
    RunInput,
    RunResult,
    RunState,
    RunStatus,
    SteerInput,
    TerminationReason,
    TraceKind,
)
from contracts.approval import ApproveInput
from contracts.errors import CANCELLED, INCOMPLETE_RESPONSE, INVALID_INPUT, UNKNOWN_TOOL
from contracts.signals import SteerMode
from contracts.transform import RequestChanges
from conversation import ContextOpPayload, ContextPolicy, ModelView
from workflows.failures import run_error
from workflows.op_slot import OpSlot
from workflows.run.input_queue import InputQueue
from workflows.run.ledger import RunCancelledError, RunFailedError, RunLedger
from workflows.run.llm_requests import ModelCalls
from workflows.run.llm_step import LLMStep
from workflows.run.memory import RunMemory, recall_budget, recall_text
from workflows.run.output_step import OutputStep
from workflows.run.record import RunRecord
from workflows.run.request_transformer import RequestTransform
from workflows.run.stream import RunStream
from workflows.run.tool_step import ToolStep
from workflows.run.trace_log import preview
from workflows.run.usage_limits import UsageGuard

REPEAT_NUDGE = (
    "You just repeated exactly the same tool calls as in your previous step, and their results are "
    "above. Do not repeat them: use those results, try something different, or give your final answer."
)


class RunLoop:
    """One run's loop and the state it drives (queue, op slot, LLM calls, tool step, output step).

    The ledger and the record (thread and trace) are the workflow's, passed in: the loop
    changes them through their methods, and the controls and queries read them directly.
    """

    def __init__(self, run: RunInput, ledger: RunLedger, record: RunRecord, stream: RunStream) -> None:
        """Set up the run's components around its `ledger` and `record`."""
        self._input = run
        self._config = config = run.config
        self._request_id = record.request_id
        self._run_id = record.run_id
        self._ledger = ledger
        self._queue = InputQueue()
        self._ops = OpSlot()
        policy = config.context_policy or ContextPolicy()
        self._recall_chars = recall_budget(policy)
        self._memory = RunMemory(run)
        self._model = ModelCalls(config, policy, self._request_id, self._run_id, stream.grant)
        self._record = record
        self._limits = UsageGuard(config.usage_limits, run.session_usage, ledger)
        self._transform = RequestTransform(config, self._request_id, record, ledger)
        self._llm = LLMStep(self._model, record, ledger, stream, self._details, self._before_call)
        self._tools = ToolStep(run, record, ledger, self._details, self._memory)
        self._output = OutputStep(config.output, record)
        self._dropped_inputs: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> RunResult:
        """Run to a terminal state (completed, failed or cancelled) and return the result.

        Raises:
            ApplicationError: `invalid_input`, when the worker's registry lacks a tool of the
                config; `unknown_agent`, when it lacks an agent profile the config names;
                `invalid_schema`, when `output.json_schema` is not a valid JSON Schema.
        """
        self._model.offer(await self._tools.prepare())
        await self._output.prepare()  # `invalid_schema` before any LLM call
        started: dict[str, object] = {"model": self._config.model, "query": preview(self._input.query)}
        if self._input.agent_version is not None:  # an agent's version made at run time
            started["agent_version"] = self._input.agent_version
        self._record.event("request_started", data=started)
        self._record.append(
            "user",
            self._input.query,
            refs=self._input.query_refs or None,
            attachments=self._input.query_attachments or None,
        )
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
            request_id=self._request_id,
            run_id=self._run_id,
            outcome=self._ledger.outcome(),
            entries=self._record.entries,
            first_seq=self._record.first_seq,
            context_ref=self._record.active_context_ref,
            dropped_input_ids=self._dropped_inputs,
            output=self._output.value,
            agent_state=self._tools.state.result,
        )

    async def _before_call(self, view: ModelView) -> RequestChanges | None:
        self._limits.check(view)  # `usage_limit_exceeded` before the call, and before the transformer
        return await self._transform.prepare(view, self._model.tool_specs)

    async def _recall(self) -> None:
        """Before the first LLM call: the memories recall finds for the ask, after it in the thread."""
        recalled = await self._memory.recall(self._input.query)
        if recalled is None:
            return
        text, keys = recall_text(recalled.items, self._recall_chars)
        data: dict[str, Any] = {"keys": keys}
        if recalled.problem is not None:
            data["problem"] = preview(recalled.problem)
        self._record.event("memory_recalled", data=data)
        if keys:
            self._record.append("user", text, refs={"source": "memory_recall"})

    async def _loop(self) -> None:
        previous_round: list[tuple[str, str]] | None = None
        ledger = self._ledger
        if self._config.memory is not None:
            await self._recall()
            ledger.check_cancel()
        while True:
            if ledger.iteration >= ledger.max_iterations:
                self.finish("completed", reason="max_iterations")
                return
            self._drain_inputs()
            ledger.count_iteration()
            response = await self._llm.call(self._config.model)
            ledger.check_cancel()
            if response is None:  # an interrupting steer cut the call short: drain it and call again
                continue
            if response.tool_calls:
                self._record.append(
                    "assistant", response.content, tool_calls=response.tool_calls, thinking=response.thinking
                )
                await self._tools.run(response)
                self._tools.close()
                ledger.check_cancel()
                if self._tools.interrupted:
                    self._record.event("tool_round_interrupted", data={"calls": len(response.tool_calls)})
                this_round = [(call.name, call.arguments) for call in response.tool_calls]
                if this_round == previous_round:
                    self._record.append("user", REPEAT_NUDGE, refs={"source": "repeat_nudge"})
                previous_round = this_round
                continue
            if not response.content.strip() and response.finish_reason not in ("stop", "tool_calls"):
                raise RunFailedError(
                    INCOMPLETE_RESPONSE,
                    f"the model returned an empty answer (finish reason {response.finish_reason!r})",
                )
            answer = self._record.append("assistant", response.content, thinking=response.thinking)
            if self._queue.items:  # a steer continues the run first; only the answer that ends it is checked
                continue
            if not self._output.accept(response, iteration_left=ledger.iteration < ledger.max_iterations):
                continue  # a repair request was appended
            self._queue.seal()
            self.finish("completed", reason="final_answer", answer_seq=answer.seq)
            return

    # ---- what the controls and queries ask of the run -------------------------------------

    @property
    def running(self) -> bool:
        """Whether the run has not reached its terminal state."""
        return self._ledger.status == "running"

    def offer_input(self, kind: InputKind, payload: SteerInput, input_id: str) -> Ack:
        """Queue steer/inject input for the next iteration (`queued`), or say why not.

        A steer with `mode: interrupt` also cuts short the LLM call or tool round in
        flight (see `workflows.run.llm_step` and `ToolRound.interrupt`); its `Ack.mode` says
        whether anything was interrupted (`interrupt`) or it only waits (`queue`).
        """
        ack = self._queue.offer(kind, payload, self._request_id, input_id)
        if ack.status != "queued" or kind != "steer":
            return ack
        mode: SteerMode = "queue"
        if payload.mode == "interrupt" and not self._ledger.cancelling:
            if self._llm.interrupt():
                mode = "interrupt"
            elif self._tools.in_flight:
                self._tools.interrupt(payload.cancel_tools)
                mode = "interrupt"
        return ack.model_copy(update={"mode": mode})

    def accept_cancel(self, reason: str | None) -> Ack:
        """Accept a cancel and interrupt the step in flight (`accepted`), or say why not."""
        ack = self._ledger.accept_cancel(reason)
        if ack.status == "accepted":
            self.interrupt()
        return ack

    async def approve(self, payload: ApproveInput) -> Ack:
        """Decide a tool call waiting for approval, or refuse by name (nothing changes then)."""
        return await self._tools.approve(payload)

    def defer_op(self, op: ContextOpPayload) -> ContextOpPayload | None:
        """Keep a context op for the end of the run; return the op it replaces, if any."""
        return self._ops.defer(op)

    def state(self) -> RunState:
        """Status, iteration, the tool round in flight, usage and outcome (the `state` query)."""
        return RunState(
            request_id=self._request_id,
            run_id=self._run_id,
            outcome=self._ledger.outcome(),
            iteration=self._ledger.iteration,
            pending_tool_calls=self._tools.statuses,
            pending_approvals=self._tools.pending_approvals,
            queued_inputs=len(self._queue.items),
            active_context_ref=self._record.active_context_ref,
            pending_context_op=self._ops.pending,
            thread_length=self._record.next_seq,
            usage_limits=self._config.usage_limits,
            agent_state=self._tools.state.state,
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
        self._tools.close()
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
        self._record.event(kinds.get(status, "request_cancelled"), data=data)
        pending = self._ops.take()
        if pending is not None:
            self._record.apply_op(pending)
        self._details()

    def _finish_cancelled(self) -> None:
        self.finish("cancelled", error=RunError(type=CANCELLED, message=self._ledger.cancel_message()))

    def interrupt(self) -> None:
        """Cancel the loop's in-flight step (its activity hears it with `TRY_CANCEL`)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    # ---- details ---------------------------------------------------------------------------

    def _drain_inputs(self) -> None:
        for item in self._queue.drain():
            self._record.add_input(item)

    def _details(self) -> None:
        parts = [
            f"status: {self._ledger.status}",
            f"iteration {self._ledger.iteration}/{self._config.max_iterations}",
            f"model {self._config.model}",
        ]
        usage = self._limits.details()
        if usage:
            parts.append(usage)
        tools = ", ".join(status.name for status in self._tools.statuses)
        if tools:
            parts.append(f"tools: {preview(tools)}")
        waiting = ", ".join(f"{p.name} ({p.call_id})" for p in self._tools.pending_approvals)
        if waiting:
            parts.append(f"awaiting approval: {preview(waiting)}")
        if self._ledger.termination:
            parts.append(f"termination: {self._ledger.termination}")
        workflow.set_current_details(" · ".join(parts))
