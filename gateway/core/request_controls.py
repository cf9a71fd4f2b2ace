"""The request core's controls of a running request: steer, approve, cancel.

Steer and approve go to the session, which forwards them to its active run and checks they name
it (`expected_request_id` for a steer; a call id lives in one run only). Cancel goes to the
request's run, the one workflow whose cancel names the request (a session's cancel stops
whatever runs). Only a request that runs (or awaits approval) takes them: a queued one, or an
ended one, is `not_running`.
"""

from __future__ import annotations

import contextlib

from temporalio.service import RPCError

from clients.errors import RejectedError
from contracts import Ack
from contracts.errors import NOT_RUNNING, UNKNOWN_CALL
from contracts.run import RunResult
from contracts.session import RequestRecord
from contracts.signals import SteerMode
from gateway.context import GatewayContext
from gateway.core.inputs import Decision
from gateway.core.request_reads import RequestReads
from gateway.core.request_state import RequestState
from gateway.core.request_waits import RequestWaits
from gateway.core.threads import Thread, accepted, temporal_reads
from gateway.errors import GatewayError
from gateway.identity.scopes import APPROVE, require

__all__ = ["RequestControls"]


class RequestControls:
    """Steering, approving and cancelling a thread's running request."""

    def __init__(self, ctx: GatewayContext, reads: RequestReads, waits: RequestWaits) -> None:
        """The controls of the gateway `ctx`."""
        self._ctx = ctx
        self._reads = reads
        self._waits = waits

    async def running(self, thread: Thread, request_id: str) -> RequestRecord:
        """The record of a request that runs now (or awaits approval).

        Raises:
            GatewayError: 404 `not_found`; 400 `not_running` for a queued or an ended request.
        """
        record = await self._reads.record(thread, request_id)
        if record.status != "running":
            raise GatewayError.refused(NOT_RUNNING, f"this request has ended ({record.status})")
        if (await self._reads.status(thread)).active_request_id != request_id:
            record = await self._reads.record(thread, request_id)
            if record.status == "running":
                raise GatewayError.refused(NOT_RUNNING, "this request waits for its turn: nothing runs yet")
            raise GatewayError.refused(NOT_RUNNING, f"this request has ended ({record.status})")
        return record

    async def steer(
        self,
        thread: Thread,
        request_id: str,
        text: str,
        *,
        mode: SteerMode = "queue",
        source: str | None = None,
    ) -> Ack:
        """Steer the running request: `text` reaches the agent before its next step (`queued`).

        Raises:
            GatewayError: `not_found`, `not_running`, or the session's refusal (`blank_content`,
                `request_mismatch`, `queue_full`, ...).
        """
        await self.running(thread, request_id)
        with temporal_reads():
            ack = await self._reads.session(thread).steer(
                text, expected_request_id=request_id, source=source, mode=mode
            )
        return accepted(ack, "the steer was refused")

    async def approve(self, thread: Thread, request_id: str, decision: Decision, *, approver: str) -> Ack:
        """Decide a call of the running request awaiting approval (`decision.call_id`, default the oldest).

        The thread's principal needs the `agents:approve` scope (checked here once for every
        protocol, before anything is read; the guard checks the scope of what it read in the body too).

        Raises:
            GatewayError: 403 `forbidden` (no `agents:approve`), `not_found`, `not_running`,
                `unknown_call`, or the run's refusal (`already_decided`, `invalid_arguments`, ...):
                the call keeps waiting.
        """
        require(thread.principal, APPROVE)
        record = await self.running(thread, request_id)
        call_id = decision.call_id
        if call_id is None:
            pending = await self._reads.pending(record.run_workflow_id)
            if not pending:
                raise GatewayError.refused(UNKNOWN_CALL, "this request has no call awaiting approval")
            call_id = pending[0].call_id
        with temporal_reads():
            ack = await self._reads.session(thread).approve(
                call_id,
                approved=decision.approved,
                reason=decision.reason,
                arguments=decision.arguments,
                approver=approver,
            )
        return accepted(ack, "the decision was refused")

    async def cancel(self, thread: Thread, request_id: str, *, reason: str) -> RequestState:
        """Cancel the running request's run, wait for it to end `cancelled`; its state then.

        Raises:
            GatewayError: `not_found`, `not_running` (queued: nothing runs yet; or ended).
        """
        record = await self.running(thread, request_id)
        run = self._ctx.runs.get(record.run_workflow_id)
        with temporal_reads():
            ack = await run.cancel(reason=reason)
        accepted(ack, "the request could not be cancelled")
        result: RunResult | None = None
        with contextlib.suppress(RejectedError, RPCError):
            result = await run.result()
        return await self._waits.settled(thread, request_id, result)
