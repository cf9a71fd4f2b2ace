"""The control surface of a `ReActRun`: steer, inject, context_modify and cancel.

A mixin of `ReActRun` (Temporal collects handlers from base classes too). Each control
is a fire-and-forget signal and a same-named Update that returns an `Ack`; both go
through one method, so they behave identically.
"""

from __future__ import annotations

import asyncio

from pydantic import JsonValue
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts import Ack, CancelInput, RunStatus, SteerInput, TraceKind
    from conversation import ContextModifyInput, ContextOpPayload, ConversationState
    from workflows.input_queue import InputKind, InputQueue, InputRejectedError
    from workflows.op_rules import op_ack
    from workflows.trace_log import TraceLog


class RunControls:
    """Input, context ops and cancellation of a run, and its trace events."""

    _request_id: str
    _status: RunStatus
    _iteration: int
    _queue: InputQueue
    _trace: TraceLog
    _conversation: ConversationState
    _cancel_reason: str | None
    _loop_task: asyncio.Task[None] | None

    def _event(
        self,
        kind: TraceKind,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, JsonValue] | None = None,
    ) -> None:
        self._trace.add(
            kind, workflow.now(), self._iteration, call_id=call_id, input_id=input_id, op_id=op_id, data=data
        )

    # ---- context operations ----------------------------------------------------------------

    def _apply_op(self, op: ContextOpPayload) -> bool:
        entry = self._conversation.apply_operation(op, workflow.now(), {"request_id": self._request_id})
        if entry is not None:
            self._event(
                "context_op_applied",
                op_id=op.op_id,
                data={"type": op.operation.type, "context_ref": op.context_ref, "seq": entry.seq},
            )
        return entry is not None

    def _context_modify(self, request: ContextModifyInput) -> Ack:
        ack, op = op_ack(self._conversation, request, running=self._status == "running")
        if ack.status == "rejected":
            self._event("context_op_rejected", op_id=ack.op_id, data={"reason": ack.message})
        elif op is not None and ack.status == "applied":
            self._apply_op(op)
        elif op is not None:
            replaced = self._conversation.pending_context_op
            self._conversation.pending_context_op = op
            self._event(
                "context_op_deferred",
                op_id=op.op_id,
                data={"type": op.operation.type, "replaces": replaced.op_id if replaced else None},
            )
        return ack

    # ---- input and cancellation ------------------------------------------------------------

    def _offer(self, kind: InputKind, payload: SteerInput) -> Ack:
        input_id = payload.input_id or str(workflow.uuid4())
        try:
            self._queue.offer(kind, payload, self._request_id, input_id)
        except InputRejectedError as err:
            self._event("input_rejected", data={"kind": kind, "reason": err.reason, "message": err.message})
            return Ack(status="rejected", reason=err.reason, message=err.message)
        return Ack(status="queued", input_id=input_id)

    def _cancel(self, payload: CancelInput) -> Ack:
        if self._status != "running" or self._cancel_reason is not None:
            state = "cancelling" if self._status == "running" else self._status
            return Ack(status="rejected", reason="not_running", message=f"the run is {state}")
        self._cancel_reason = payload.reason or ""
        if self._loop_task is not None:
            self._loop_task.cancel()
        return Ack(status="accepted", message="the run is being cancelled")

    @workflow.signal(name="steer")
    def steer_signal(self, payload: SteerInput) -> None:
        """Queue user-style steering input (fire-and-forget)."""
        self._offer("steer", payload)

    @workflow.update(name="steer")
    def steer_update(self, payload: SteerInput) -> Ack:
        """Queue steering input and say whether it was queued."""
        return self._offer("steer", payload)

    @workflow.signal(name="inject")
    def inject_signal(self, payload: SteerInput) -> None:
        """Queue user-style injected input (fire-and-forget)."""
        self._offer("inject", payload)

    @workflow.update(name="inject")
    def inject_update(self, payload: SteerInput) -> Ack:
        """Queue injected input and say whether it was queued."""
        return self._offer("inject", payload)

    @workflow.signal(name="context_modify")
    def context_modify_signal(self, payload: ContextModifyInput) -> None:
        """Submit a context operation (deferred while the run is active; latest wins)."""
        self._context_modify(payload)

    @workflow.update(name="context_modify")
    def context_modify_update(self, payload: ContextModifyInput) -> Ack:
        """Submit a context operation and say what happened to it."""
        return self._context_modify(payload)

    @workflow.signal(name="cancel")
    def cancel_signal(self, payload: CancelInput) -> None:
        """Cancel the run (the deferred context op is still applied)."""
        self._cancel(payload)

    @workflow.update(name="cancel")
    def cancel_update(self, payload: CancelInput) -> Ack:
        """Cancel the run and say whether the request was accepted."""
        return self._cancel(payload)
