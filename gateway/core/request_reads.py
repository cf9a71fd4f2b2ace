"""The request core's reads: a thread's session, its requests' records, where a request stands.

Each read of a session is shared by concurrent callers (`gateway.core.single_flight`), and its
failures mean what `gateway.core.threads.temporal_reads` says. `awaiting` is the one rule of
"still awaiting approval" for every stream that pauses there.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection

from pydantic import JsonValue
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from contracts.approval import PendingApproval
from contracts.run import RunResult
from contracts.session import RequestRecord, SessionStatus
from gateway.context import GatewayContext
from gateway.core.request_state import RequestState, state_of
from gateway.core.single_flight import shared
from gateway.core.threads import Thread, temporal_reads
from gateway.errors import GatewayError, not_found

__all__ = ["RequestReads"]

log = logging.getLogger(__name__)


class RequestReads:
    """What a caller may read of a thread's requests, over the typed client."""

    def __init__(self, ctx: GatewayContext) -> None:
        """The reads of the gateway `ctx`."""
        self._ctx = ctx

    def session(self, thread: Thread) -> SessionHandle:
        """The typed client's handle of the thread's session."""
        return self._ctx.sessions.get(thread.session_id)

    # ---- reads -------------------------------------------------------------------------------

    async def status(self, thread: Thread) -> SessionStatus:
        """The session's status (one read in flight per session, shared by concurrent callers).

        Raises:
            GatewayError: 404 `not_found` (no such thread, or another principal's), 503 `unavailable`.
        """
        with temporal_reads():
            return await shared((thread.session_id, "status"), self.session(thread).status)

    async def records(self, thread: Thread) -> list[RequestRecord]:
        """The records of the session's last 100 requests, oldest first.

        Raises:
            GatewayError: 404 `not_found`, 503 `unavailable`.
        """
        with temporal_reads():
            return await shared((thread.session_id, "requests"), self.session(thread).requests)

    async def record(self, thread: Thread, request_id: str) -> RequestRecord:
        """The session's record of a request.

        Raises:
            GatewayError: 404 `not_found` (the thread, or the request), 503 `unavailable`.
        """
        found = next((r for r in await self.records(thread) if r.request_id == request_id), None)
        if found is None:
            raise not_found("request in this thread")
        return found

    async def eval_case(self, thread: Thread, request_id: str | None = None) -> dict[str, JsonValue]:
        """Request `request_id` (default: the last) as an evaluation case `<thread>/<request>`.

        pydantic-evals' case form, with the tool results its run got (`clients.eval_cases`).

        Raises:
            GatewayError: 404 `not_found` (the thread, or the request), 503 `unavailable`.
        """
        records = await self.records(thread)
        if request_id is None:
            if not records:
                raise not_found("request in this thread")
            request_id = records[-1].request_id
        else:
            await self.record(thread, request_id)
        with temporal_reads("request in this thread"):
            return await self.session(thread).eval_case(request_id, name=f"{thread.thread_id}/{request_id}")

    async def pending(self, run_workflow_id: str) -> list[PendingApproval]:
        """The calls of a run awaiting a decision, oldest first (none before its start or after its end).

        Raises:
            GatewayError: 503 `unavailable` (Temporal did not answer: "none" would be a guess).
        """
        run = self._ctx.runs.get(run_workflow_id)
        try:
            return await shared((run_workflow_id, "pending_approvals"), run.pending_approvals)
        except RPCError as error:
            if error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                return []
            log.warning("a read of a run's pending approvals failed: %s %s", error.status.name, error.message)
            raise GatewayError.unavailable() from None

    async def awaiting(
        self, run_workflow_id: str, calls: Collection[str] | None = None
    ) -> list[PendingApproval]:
        """The run's calls awaiting a decision if one of `calls` (any, when None) is among them, else none.

        The one rule of "still awaiting approval" for every stream that pauses there: an
        `approval_requested` a stream replays may name a call decided since, so only a call
        the run still lists counts. Answers every pending call (the interrupts to show).

        Raises:
            GatewayError: 503 `unavailable` (`pending`).
        """
        pending = await self.pending(run_workflow_id)
        return pending if calls is None or any(p.call_id in calls for p in pending) else []

    async def trace_head(self, run_workflow_id: str) -> int:
        """The seq of the run's newest trace event (-1 before its first): where a continuing stream starts.

        Raises:
            GatewayError: 404 `not_found`, 503 `unavailable`.
        """
        with temporal_reads("run"):
            trace = await self._ctx.runs.get(run_workflow_id).trace()
        return max((event.seq for event in trace.events), default=-1)

    async def active_head(self, thread: Thread) -> tuple[str, int] | None:
        """(the running request's run, its `trace_head`), if a request runs and Temporal answers.

        Read before a steering ask: a stream of the steered request continues from there.
        """
        try:
            status = await self.status(thread)
            run_id = status.active_run_workflow_id
            return (run_id, await self.trace_head(run_id)) if run_id is not None else None
        except GatewayError:
            return None

    async def approvals_asked_at(self, run_workflow_id: str, call_ids: set[str | None]) -> int | None:
        """The seq of the newest `approval_requested` event of `call_ids` in the run (None: none found).

        A stream that continues a request after decisions starts right after it.

        Raises:
            GatewayError: 404 `not_found`, 503 `unavailable`.
        """
        with temporal_reads("run"):
            trace = await self._ctx.runs.get(run_workflow_id).trace()
        seqs = [e.seq for e in trace.events if e.kind == "approval_requested" and e.call_id in call_ids]
        return max(seqs) if seqs else None

    async def state(self, thread: Thread, request_id: str, result: RunResult | None = None) -> RequestState:
        """Where the request stands (`result`: its run's, when the caller has it already).

        Raises:
            GatewayError: 404 `not_found`, 503 `unavailable`.
        """
        record = await self.record(thread, request_id)
        if record.status == "running":
            if (await self.status(thread)).active_request_id != request_id:
                record = await self.record(thread, request_id)  # not active: waiting, or ended meanwhile
                if record.status == "running":
                    return state_of(record, "queued")
            else:
                pending = await self.pending(record.run_workflow_id)
                return state_of(record, "awaiting_approval" if pending else "running", pending=tuple(pending))
        return await self.ended(record, result)

    async def ended(self, record: RequestRecord, result: RunResult | None) -> RequestState:
        """The state of an ended request from its record (with its answer and output, once completed)."""
        error = record.outcome.error
        state = state_of(
            record,
            record.status,
            error_code=error.type if error is not None else None,
            error_message=error.message if error is not None else None,
        )
        if record.status != "completed":
            return state
        if result is None:
            with contextlib.suppress(RejectedError, RPCError):
                result = await self._ctx.runs.get(record.run_workflow_id).result()
        if result is None:
            return state
        return state_of(record, "completed", answer=result.answer, output=result.output)
