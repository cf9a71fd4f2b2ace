"""The run's control surface: steer, inject, context_modify and cancel, as signals and as Updates.

Every handler takes whatever arrives (`*args`): a payload that does not decode, or is
over a size limit, is rejected by the Update's validator (`invalid_input` /
`payload_too_large`, nothing written to history) or, for a signal, dropped with a
warning and counted in the trace. Decisions that depend on the run's state come back
as an `Ack`. A session that forwards input or a cancel sets `reply_to`; the run then
signals its `Ack` back to that session (only to its own parent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ApplicationError, FailureError

with workflow.unsafe.imports_passed_through():
    from contracts import Ack, CancelInput, ControlAck, InputKind, SteerInput
    from contracts.decoding import PayloadProblem, decode_args
    from conversation import ContextModifyInput, ContextOpPayload, ConversationState
    from workflows.input_queue import InputQueue
    from workflows.op_slot import OpSlot, op_ack
    from workflows.run_ledger import RunLedger
    from workflows.trace_log import preview

CONTROL_ACK_SIGNAL = "control_ack"
"""The signal a run sends its parent session with the `Ack` of forwarded input or a cancel."""


class EventSink(Protocol):
    """Records a trace event (the run's `_event`)."""

    def __call__(
        self,
        kind: Any,
        *,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Record one event."""
        ...


class RunControls:
    """Decides what happens to control input; the run owns the state it changes."""

    def __init__(
        self,
        *,
        request_id: str,
        ledger: RunLedger,
        queue: InputQueue,
        ops: OpSlot,
        conversation: ConversationState,
        event: EventSink,
        apply_op: Callable[[ContextOpPayload], None],
        interrupt: Callable[[], None],
    ) -> None:
        """Bind the run's components (`interrupt` cancels the loop's in-flight activity)."""
        self._request_id = request_id
        self._ledger = ledger
        self._queue = queue
        self._ops = ops
        self._conversation = conversation
        self._event = event
        self._apply_op = apply_op
        self._interrupt = interrupt

    # ---- validators: read-only, reject what cannot be used before it reaches history ----

    def validate(self, name: str, args: Sequence[Any]) -> None:
        """The Update validator of `name`: raise `ApplicationError(code)` for an unusable payload."""
        try:
            decode_args(args, _MODELS[name], name)
        except PayloadProblem as problem:
            raise ApplicationError(problem.message, type=problem.code, non_retryable=True) from None

    # ---- handlers ----

    def update(self, name: str, args: Sequence[Any]) -> Ack:
        """An Update (already validated)."""
        return self._decide(name, decode_args(args, _MODELS[name], name))

    async def signal(self, name: str, args: Sequence[Any]) -> None:
        """A signal: decide, and answer a forwarding parent."""
        try:
            payload = decode_args(args, _MODELS[name], name)
        except PayloadProblem as problem:
            workflow.logger.warning("dropped a %s signal: %s", name, problem)
            self._event(
                "input_rejected",
                data={"kind": name, "reason": problem.code, "message": preview(problem.message)},
            )
            return
        ack = self._decide(name, payload)
        reply_to = getattr(payload, "reply_to", None)
        parent = workflow.info().parent
        if reply_to is None or parent is None or parent.workflow_id != reply_to:
            return
        ack_id = payload.input_id if isinstance(payload, SteerInput) else getattr(payload, "cancel_id", None)
        if ack_id is None:
            return
        try:
            await workflow.get_external_workflow_handle(reply_to).signal(
                CONTROL_ACK_SIGNAL, ControlAck(id=ack_id, ack=ack)
            )
        except FailureError as err:  # the session is gone: nobody is waiting for the answer
            workflow.logger.warning("could not answer %s: %s", reply_to, err)

    def _decide(self, name: str, payload: Any) -> Ack:
        if isinstance(payload, SteerInput):
            kind: InputKind = "inject" if name == "inject" else "steer"
            return self._offer(kind, payload)
        if isinstance(payload, CancelInput):
            return self._cancel(payload)
        assert isinstance(payload, ContextModifyInput)
        return self._modify(payload)

    def _offer(self, kind: InputKind, payload: SteerInput) -> Ack:
        input_id = payload.input_id or str(workflow.uuid4())
        ack = self._queue.offer(kind, payload, self._request_id, input_id)
        if ack.status == "rejected":
            data = {"kind": kind, "reason": ack.reason, "message": ack.message}
            self._event("input_rejected", input_id=payload.input_id, data=data)
        return ack

    def _cancel(self, payload: CancelInput) -> Ack:
        ack = self._ledger.accept_cancel(payload.reason)
        if ack.status == "accepted":
            self._interrupt()
        return ack

    def _modify(self, request: ContextModifyInput) -> Ack:
        ack, op = op_ack(self._conversation, request, running=self._ledger.status == "running")
        if ack.status == "rejected":
            self._event(
                "context_op_rejected", op_id=ack.op_id, data={"reason": ack.reason, "message": ack.message}
            )
        elif op is not None and ack.status == "applied":
            self._apply_op(op)
        elif op is not None:
            replaced = self._ops.defer(op)
            data = {"type": op.operation.type, "replaces": replaced.op_id if replaced else None}
            self._event("context_op_deferred", op_id=op.op_id, data=data)
        return ack


_MODELS: dict[str, type[SteerInput] | type[CancelInput] | type[ContextModifyInput]] = {
    "steer": SteerInput,
    "inject": SteerInput,
    "cancel": CancelInput,
    "context_modify": ContextModifyInput,
}
