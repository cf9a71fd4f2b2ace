"""The session's control surface: steer, inject, cancel, approve, context_modify, compact, config controls.

Mirrors `RunControls`: decisions come back as an `Ack`, and the `SessionLoop` owns the
state they change. Steer, inject, cancel and approve are forwarded to the active run, whose
own `Ack` the session returns (see `workflows.session.run_forwarding`). Context ops, a
compaction included, go through the one rule of `workflows.op_slot`: applied when
idle, deferred while a run is active, `duplicate` when the op id was applied already.
"""

from __future__ import annotations

from functools import partial

from pydantic import BaseModel
from temporalio import workflow

from contracts import Ack, CancelInput, InputKind, SteerInput
from contracts.approval import ApproveInput
from contracts.compaction import CompactInput
from contracts.errors import NOTHING_TO_COMPACT
from contracts.session import ResetInput
from conversation import ContextModifyInput, ContextOpPayload
from workflows.controls import Control
from workflows.op_slot import duplicate, op_ack, settle
from workflows.session.loop import SessionLoop
from workflows.session.settings import CONFIG_CONTROLS


class SessionControls:
    """Decides what happens to control input; the `SessionLoop` owns the state it changes."""

    def __init__(self, session: SessionLoop) -> None:
        """Control `session`."""
        self._session = session

    def controls(self) -> list[Control]:
        """The session's controls, to register as signals and Updates."""
        return [
            Control("steer", SteerInput, partial(self._input, "steer")),
            Control("inject", SteerInput, partial(self._input, "inject")),
            Control("cancel", CancelInput, self._cancel),
            Control("approve", ApproveInput, self._approve),
            Control("context_modify", ContextModifyInput, self._modify),
            Control("compact", CompactInput, self._compact),
            Control("reset_thread", ResetInput, self._reset),
            *(
                Control(name, model, partial(self._configure, name))
                for name, model in CONFIG_CONTROLS.items()
            ),
        ]

    async def _input(self, kind: InputKind, payload: SteerInput, via_signal: bool) -> Ack:
        return await self._session.forward_input(kind, payload, wait=not via_signal)

    async def _cancel(self, payload: CancelInput, via_signal: bool) -> Ack:
        return await self._session.forward_cancel(payload, wait=not via_signal)

    async def _approve(self, payload: ApproveInput, via_signal: bool) -> Ack:
        return await self._session.forward_approve(payload, wait=not via_signal)

    async def _configure(self, name: str, payload: BaseModel, via_signal: bool) -> Ack:
        return await self._session.configure(name, payload)

    async def _modify(self, request: ContextModifyInput, via_signal: bool) -> Ack:
        session = self._session
        ack, op = op_ack(session, request, running=session.running)
        self._carry_out(ack, op)
        return ack

    async def _reset(self, request: ResetInput, via_signal: bool) -> Ack:
        return await self._modify(self._session.reset_request(request), via_signal)

    async def _compact(self, request: CompactInput, via_signal: bool) -> Ack:
        session = self._session
        op_id = request.op_id or f"compact-{workflow.uuid4()}"
        seen = duplicate(session, op_id)  # before summarising: a repeated compact costs no LLM call
        if seen is not None:
            return seen
        op = await session.compaction(op_id, request.model)
        if op is None:
            return Ack.rejected(NOTHING_TO_COMPACT, "nothing older to summarise", op_id=op_id)
        ack, settled = settle(session, op, running=session.running)
        self._carry_out(ack, settled)
        return ack

    def _carry_out(self, ack: Ack, op: ContextOpPayload | None) -> None:
        if op is not None and ack.status == "applied":
            self._session.apply_op(op)
        elif op is not None and ack.status == "deferred":
            self._session.defer_op(op)
