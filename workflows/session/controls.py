"""The session's control surface: steer, inject, cancel, approve, context_modify, compact, config controls.

Mirrors `RunControls`: decisions come back as an `Ack`, and the session's components
(`SessionParts`) own the state they change. Steer, inject, cancel and approve are
forwarded to the active run, whose own `Ack` the session returns (see
`workflows.session.run_forwarding`). Context ops, a compaction included, go through the
one rule of `workflows.op_slot`: applied when idle, deferred while a run is active,
`duplicate` when the op id was applied already.
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
from contracts.session_config import SystemPromptInput
from conversation import ContextModifyInput, ContextOpPayload
from workflows.controls import Control
from workflows.op_slot import duplicate, op_ack, settle
from workflows.session.fork import reset_request
from workflows.session.parts import SessionParts
from workflows.session.settings import CONFIG_CONTROLS


class SessionControls:
    """Decides what happens to control input; the session's components own the state it changes."""

    def __init__(self, parts: SessionParts) -> None:
        """Control the session of `parts`."""
        self._thread = parts.thread
        self._settings = parts.settings
        self._book = parts.book
        self._ops = parts.ops
        self._forwarder = parts.forwarder
        self._compactor = parts.compactor

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
        return await self._forwarder.forward_input(kind, payload, wait=not via_signal)

    async def _cancel(self, payload: CancelInput, via_signal: bool) -> Ack:
        return await self._forwarder.forward_cancel(payload, wait=not via_signal)

    async def _approve(self, payload: ApproveInput, via_signal: bool) -> Ack:
        return await self._forwarder.forward_approve(payload, wait=not via_signal)

    async def _configure(self, name: str, payload: BaseModel, via_signal: bool) -> Ack:
        """Apply a config control (a new system prompt also becomes the conversation's base prompt)."""
        ack = await self._settings.apply(name, payload)
        if isinstance(payload, SystemPromptInput):
            self._thread.set_base_system_prompt(payload.system_prompt)
        return ack

    @property
    def _running(self) -> bool:
        """Whether a request is active (context ops wait for its end)."""
        return self._book.active is not None

    async def _modify(self, request: ContextModifyInput, via_signal: bool) -> Ack:
        ack, op = op_ack(self._thread, request, running=self._running)
        self._carry_out(ack, op)
        return ack

    async def _reset(self, request: ResetInput, via_signal: bool) -> Ack:
        return await self._modify(reset_request(request, self._thread), via_signal)

    async def _compact(self, request: CompactInput, via_signal: bool) -> Ack:
        op_id = request.op_id or f"compact-{workflow.uuid4()}"
        seen = duplicate(self._thread, op_id)  # before summarising: a repeated compact costs no LLM call
        if seen is not None:
            return seen
        policy, config = self._settings.session_policy(), self._settings.config
        op = await self._compactor.compaction(op_id, policy, config, request.model)
        if op is None:
            return Ack.rejected(NOTHING_TO_COMPACT, "nothing older to summarise", op_id=op_id)
        ack, settled = settle(self._thread, op, running=self._running)
        self._carry_out(ack, settled)
        return ack

    def _carry_out(self, ack: Ack, op: ContextOpPayload | None) -> None:
        if op is not None and ack.status == "applied":
            self._thread.apply(op, {})
        elif op is not None and ack.status == "deferred":
            self._ops.defer(op)
