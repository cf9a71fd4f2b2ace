"""The run's control surface: steer, inject, context_modify, cancel and approve (see `workflows.controls`).

Decisions that depend on the run's state come back as an `Ack`. A session that forwards
input or a cancel sets `reply_to`; the run then signals its `Ack` back to that session
(only to its own parent), so the session answers its caller with the run's own decision.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import FailureError

from contracts import Ack, CancelInput, ControlAck, InputKind, SteerInput
from contracts.approval import ApproveInput
from contracts.decoding import PayloadProblem
from contracts.errors import NOT_RUNNING
from conversation import ContextModifyInput
from workflows.controls import Control
from workflows.op_slot import op_ack
from workflows.run.loop import RunLoop
from workflows.run.record import RunRecord
from workflows.run.trace_log import preview

CONTROL_ACK_SIGNAL = "control_ack"
"""The signal a run sends its parent session with the `Ack` of forwarded input or a cancel."""


class RunControls:
    """Decides what happens to control input; the `RunLoop` and the `RunRecord` own the state it changes."""

    def __init__(self, run: RunLoop, record: RunRecord) -> None:
        """Control `run`, recording rejections and applying context ops in its `record`."""
        self._run = run
        self._record = record

    def controls(self) -> list[Control]:
        """The run's controls, to register as signals and Updates."""
        return [
            Control("steer", SteerInput, self._steer),
            Control("inject", SteerInput, self._inject),
            Control("cancel", CancelInput, self._cancel),
            Control("context_modify", ContextModifyInput, self._modify),
            Control("approve", ApproveInput, self._approve),
        ]

    def dropped(self, name: str, problem: PayloadProblem) -> None:
        """A signal dropped for its payload: counted in the trace like any rejected input."""
        data = {"kind": name, "reason": problem.code, "message": preview(problem.message)}
        self._record.event("input_rejected", data=data)

    async def _steer(self, payload: SteerInput, via_signal: bool) -> Ack:
        return await self._input("steer", payload, via_signal)

    async def _inject(self, payload: SteerInput, via_signal: bool) -> Ack:
        return await self._input("inject", payload, via_signal)

    async def _input(self, kind: InputKind, payload: SteerInput, via_signal: bool) -> Ack:
        run = self._run
        input_id = payload.input_id or str(workflow.uuid4())
        ack = run.offer_input(kind, payload, input_id)
        if ack.status == "rejected":
            data = {"kind": kind, "reason": ack.reason, "message": ack.message}
            self._record.event("input_rejected", input_id=payload.input_id, data=data)
        if via_signal and payload.input_id is not None:
            await self._reply(payload.reply_to, payload.input_id, ack)
        return ack

    async def _cancel(self, payload: CancelInput, via_signal: bool) -> Ack:
        ack = self._run.accept_cancel(payload.reason)
        if via_signal and payload.cancel_id is not None:
            await self._reply(payload.reply_to, payload.cancel_id, ack)
        return ack

    async def _approve(self, payload: ApproveInput, via_signal: bool) -> Ack:
        run = self._run
        if run.running:
            ack = await run.approve(payload)
        else:
            ack = Ack.rejected(NOT_RUNNING, "the run has ended: no call awaits approval")
        if via_signal and payload.approval_id is not None:
            await self._reply(payload.reply_to, payload.approval_id, ack)
        return ack

    async def _modify(self, request: ContextModifyInput, via_signal: bool) -> Ack:
        record = self._record
        ack, op = op_ack(record, request, running=self._run.running)
        if ack.status == "rejected":
            data = {"reason": ack.reason, "message": ack.message}
            record.event("context_op_rejected", op_id=ack.op_id, data=data)
        elif op is not None and ack.status == "applied":
            record.apply_op(op)
        elif op is not None:
            replaced = self._run.defer_op(op)
            data = {"type": op.operation.type, "replaces": replaced.op_id if replaced else None}
            record.event("context_op_deferred", op_id=op.op_id, data=data)
        return ack

    async def _reply(self, reply_to: str | None, ack_id: str, ack: Ack) -> None:
        """Answer the parent session that forwarded this input or cancel (nobody else)."""
        parent = workflow.info().parent
        if reply_to is None or parent is None or parent.workflow_id != reply_to:
            return
        try:
            await workflow.get_external_workflow_handle(reply_to).signal(
                CONTROL_ACK_SIGNAL, ControlAck(id=ack_id, ack=ack)
            )
        except FailureError as err:  # the session is gone: nobody is waiting for the answer
            workflow.logger.warning("could not answer %s: %s", reply_to, err)
