"""Forwarding steer, inject, cancel and approve from a session to its active run, with its real answer.

Workflows cannot send Updates, so the session signals the run and the run signals
its `Ack` back (`control_ack`). The session's Update answers with that `Ack`, so it
never acks what the run rejects. When the run ends before answering, its result
decides: input the run recorded or dropped was `queued`; otherwise it never reached
the run (`idle`). A cancel is `accepted` only if the run ended `cancelled`. A signal
to a run that has just ended fails; the session answers `idle` and stays healthy.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from temporalio import workflow
from temporalio.exceptions import FailureError

from contracts import Ack, CancelInput, ControlAck, InputKind, RunResult, RunStatus, SteerInput
from contracts.approval import ApproveInput
from contracts.errors import IDLE, NOT_RUNNING
from contracts.session import RequestRecord
from workflows.input_rules import input_rejection
from workflows.session.request_book import RequestBook

ENDED_KEPT = 8
"""How many ended runs' input ids are kept to answer forwards that raced with the run's end."""


def _idle(message: str) -> Ack:
    return Ack.rejected(IDLE, message)


class RunForwarder:
    """Forwards control input to the active run and collects its answers."""

    def __init__(self, book: RequestBook) -> None:
        """Forward to the runs of `book`'s active request."""
        self._book = book
        self._child: workflow.ChildWorkflowHandle[Any, RunResult] | None = None
        self._acks: dict[str, Ack] = {}
        self._waiting: set[str] = set()
        self._ended: OrderedDict[str, tuple[RunStatus, set[str]]] = OrderedDict()

    def started(self, child: workflow.ChildWorkflowHandle[Any, RunResult]) -> None:
        """The active request's run has started."""
        self._child = child

    def ended(self, request_id: str, result: RunResult | None) -> None:
        """The active request's run has ended (`result` None: it failed or was terminated)."""
        self._child = None
        status: RunStatus = result.outcome.status if result is not None else "failed"
        seen: set[str] = set()
        if result is not None:
            seen.update(result.dropped_input_ids)
            seen.update(entry.refs["input_id"] for entry in result.entries if "input_id" in entry.refs)
        self._ended[request_id] = (status, seen)
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    def answer(self, ack: ControlAck) -> None:
        """A run's answer (signal `control_ack`); answers nobody waits for are dropped."""
        if ack.id in self._waiting:
            self._acks[ack.id] = ack.ack

    async def forward_input(self, kind: InputKind, payload: SteerInput, *, wait: bool) -> Ack:
        """Forward steer/inject input; with `wait`, return the run's own `Ack`."""
        active = self._book.active
        if active is None:
            return _idle("no request is running")
        problem = input_rejection(payload, active.request_id)
        if problem is not None:
            return problem
        input_id = str(workflow.uuid4())
        update: dict[str, Any] = {
            "input_id": input_id,
            "reply_to": workflow.info().workflow_id if wait else None,
        }
        if wait:  # before the signal: the run's answer may arrive in the same workflow task
            self._waiting.add(input_id)
        sent = await self._send(active, kind, payload.model_copy(update=update))
        if not sent:
            self._waiting.discard(input_id)
            return _idle("the request finished before the input reached it")
        if not wait:
            return Ack(status="queued", input_id=input_id)
        ended = await self._await_answer(input_id, active)
        if ended is None:
            return self._acks.pop(input_id)
        _, seen = ended
        if input_id in seen:
            return Ack(status="queued", input_id=input_id, message="the run took it and has ended since")
        return _idle("the request finished before the input reached it")

    async def forward_cancel(self, payload: CancelInput, *, wait: bool) -> Ack:
        """Forward a cancel; with `wait`, `accepted` means the run ends (or ended) `cancelled`."""
        active = self._book.active
        if active is None:
            return _idle("no request is running")
        cancel_id = str(workflow.uuid4())
        update: dict[str, Any] = {
            "cancel_id": cancel_id,
            "reply_to": workflow.info().workflow_id if wait else None,
        }
        if wait:
            self._waiting.add(cancel_id)
        if not await self._send(active, "cancel", payload.model_copy(update=update)):
            self._waiting.discard(cancel_id)
            return Ack.rejected(NOT_RUNNING, f"request {active.request_id} already finished")
        if not wait:
            return Ack(status="accepted", message=f"cancelling {active.request_id}")
        ended = await self._await_answer(cancel_id, active)
        if ended is None:
            return self._acks.pop(cancel_id)
        status, _ = ended
        if status == "cancelled":
            return Ack(status="accepted", message=f"request {active.request_id} was cancelled")
        return Ack.rejected(NOT_RUNNING, f"request {active.request_id} already {status}")

    async def forward_approve(self, payload: ApproveInput, *, wait: bool) -> Ack:
        """Forward an approval decision; with `wait`, return the run's own `Ack`."""
        active = self._book.active
        if active is None:
            return _idle("no request is running: no call awaits approval")
        approval_id = str(workflow.uuid4())
        update: dict[str, Any] = {
            "approval_id": approval_id,
            "reply_to": workflow.info().workflow_id if wait else None,
        }
        if wait:
            self._waiting.add(approval_id)
        if not await self._send(active, "approve", payload.model_copy(update=update)):
            self._waiting.discard(approval_id)
            return _idle("the request finished before the decision reached it")
        if not wait:
            return Ack(status="accepted", call_id=payload.call_id, message="forwarded to the run")
        if await self._await_answer(approval_id, active) is None:
            return self._acks.pop(approval_id)
        return _idle("the request finished before the decision reached it")

    async def _send(
        self, active: RequestRecord, name: str, payload: SteerInput | CancelInput | ApproveInput
    ) -> bool:
        """Signal the active request's run once it has started; False if it ended first."""
        await workflow.wait_condition(lambda: self._child is not None or self._book.active is not active)
        child = self._child
        if child is None or self._book.active is not active:
            return False
        try:
            await child.signal(name, payload)
        except FailureError as err:  # the run ended between our check and the signal
            workflow.logger.info("could not forward %s to %s: %s", name, active.run_workflow_id, err)
            return False
        return True

    async def _await_answer(self, answer_id: str, active: RequestRecord) -> tuple[RunStatus, set[str]] | None:
        """Wait for the run's answer (None) or its end (its status and the input ids it saw)."""
        try:
            await workflow.wait_condition(lambda: answer_id in self._acks or self._book.active is not active)
        finally:
            self._waiting.discard(answer_id)
        if answer_id in self._acks:
            return None
        return self._ended.get(active.request_id, ("failed", set()))
