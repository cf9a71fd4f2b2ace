"""The request core: what a caller can do with a thread's requests, in product terms, for every protocol.

Each operation has one place here, and every protocol adapter (AG-UI, A2A, MCP, the chat page)
calls it; refusals are `gateway.errors.GatewayError` with a product code, which each adapter
maps to its own shape.

- `ask`: the busy policy (`on_busy`, and `mode` for a steering ask) and the stale check
  (`expected_last_request`) are the session's; a request id names an earlier request only with
  the same message (else `request_id_reused`: nothing is asked).
- `state`: where a request stands, one model (`RequestState`): queued, running, awaiting
  approval, completed, failed or cancelled, with its pending approvals and, once ended, its
  answer, output, usage and error.
- `steer`, `approve`: to the session, which forwards them to its active run and checks they name
  it (`expected_request_id` for a steer; a call id lives in one run only). `cancel`: to the
  request's run, the one workflow whose cancel names the request (a session's cancel stops
  whatever runs). Only a request that runs (or awaits approval) takes them: a queued one, or an
  ended one, is `not_running`.
- `erase`: the thread's session and runs deleted from Temporal (`gateway.core.erase`).
- Waiting: `wait` follows the request's own run through the hub (one subscription for every
  viewer) until it ends or awaits approval; `until_started` asks the session, backing off, while
  a queued request waits (the hub follows runs, and a queued request has none yet: following
  the run ahead of it instead kept a second feed polling that run, which cost more than it saved
  on a busy worker); `settled` waits (briefly) for the session to record a run's end, so every
  read after agrees.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from clients.inputs import new_id
from clients.memory import Memory
from clients.session_ask import ask_input
from clients.session_handle import SessionHandle
from contracts import Ack, Usage
from contracts.approval import PendingApproval
from contracts.errors import NOT_RUNNING, QUOTA_EXCEEDED, REQUEST_ID_REUSED, UNKNOWN_CALL
from contracts.run import RunResult
from contracts.session import QUERY_PREVIEW_CHARS, AskAccepted, AskInput, OnBusy, RequestRecord, SessionStatus
from contracts.signals import SteerMode
from contracts.stream import DeltaEvent
from conversation.attachments import Attachment
from gateway.context import GatewayContext
from gateway.core.erase import Erased, ErasedPrincipal, erase_principal, erase_thread
from gateway.core.follow import RunEnd, follow_run
from gateway.core.inputs import Decision
from gateway.core.single_flight import shared
from gateway.core.threads import Thread, temporal_reads
from gateway.errors import GatewayError, not_found
from gateway.guard.quotas import ActiveRequests
from gateway.identity.scopes import APPROVE, require
from gateway.owners import fork_session_id, parse_session_id

__all__ = ["ENDED", "Forked", "RequestCore", "RequestState", "RequestStatus", "ended_state"]

log = logging.getLogger(__name__)
RequestStatus = Literal["queued", "running", "awaiting_approval", "completed", "failed", "cancelled"]
ENDED = frozenset({"completed", "failed", "cancelled"})
SETTLE_S = 5.0
"""How long a read after a run's end waits for its session to record that end."""
SETTLE_POLL_S = (0.01, 0.02, 0.05, 0.1, 0.25)
"""How long it waits between asks, then 0.25 s on: each ask is a query, which adds no history but
replays the session on a worker, so a session slow to record the end is not asked in a tight loop."""
QUEUED_POLL_S = (0.05, 0.1, 0.25, 0.5)
"""The waits between asks of a session whether a queued request has started."""
MAX_WAIT_S = 600.0
Report = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class RequestState:
    """Where a request stands (`status`), with what each status has to say."""

    request_id: str
    run_workflow_id: str
    status: RequestStatus
    query_preview: str = ""
    usage: Usage = field(default_factory=Usage)
    pending: tuple[PendingApproval, ...] = ()
    """The calls awaiting a decision (`awaiting_approval`), oldest first."""
    answer: str | None = None
    """The answer's text (`completed`)."""
    output: JsonValue | None = None
    """The structured output (`completed`, when the agent has one)."""
    error_code: str | None = None
    """Why it failed (`failed`, `cancelled`): a code of `contracts.errors`."""
    error_message: str | None = None
    agent_version: int | None = None
    """The version of the agent made at run time that ran it (None: a code profile's request)."""

    @property
    def ended(self) -> bool:
        """Whether the request has ended (completed, failed or cancelled)."""
        return self.status in ENDED


@dataclass(frozen=True)
class Forked:
    """A fork: the new thread, and the entry of the parent's thread it starts after."""

    thread: Thread
    seq: int


class RequestCore:
    """The operations on a thread's requests (see the module docstring), over the typed client and the hub."""

    def __init__(self, ctx: GatewayContext) -> None:
        """The core of the gateway `ctx`."""
        self._ctx = ctx
        self._active = ActiveRequests(ctx.settings.identity.quotas, ctx.client, ctx.settings.task_queue)
        self._memory: Memory | None = None

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

    async def _still_awaiting(self, run_workflow_id: str) -> bool:
        try:
            return bool(await self.awaiting(run_workflow_id))
        except GatewayError:
            return False  # unread: the wait goes on; the next event (or the caller's timeout) looks again

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
                    return _state(record, "queued")
            else:
                pending = await self.pending(record.run_workflow_id)
                return _state(record, "awaiting_approval" if pending else "running", pending=tuple(pending))
        return await self._ended(record, result)

    async def _ended(self, record: RequestRecord, result: RunResult | None) -> RequestState:
        error = record.outcome.error
        state = _state(
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
        return _state(record, "completed", answer=result.answer, output=result.output)

    # ---- asks --------------------------------------------------------------------------------

    async def ask(
        self,
        thread: Thread,
        text: str,
        *,
        request_id: str | None = None,
        on_busy: OnBusy = "reject",
        mode: SteerMode = "queue",
        expected_last_request: str | None = None,
        source: str | None = None,
        webhook_url: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> AskAccepted:
        """Ask `text` under the busy policy; what the session did with it.

        `attachments` are the user message's files, taken in before (`gateway.core.attachments`).

        `request_id` is the idempotency key: asking again with it answers with the same
        request, if the message is the same. With `on_busy="steer"`, `mode="interrupt"` steers
        the running request cutting its model call in flight (nothing running: it is asked).
        `webhook_url` gets the request's signed webhooks (its end; an approval that waits),
        checked by the session against the deployment's allow-list.

        Raises:
            GatewayError: the session's refusal (`busy`, `stale`, `ask_queue_full`,
                `invalid_input`, `payload_too_large`, ...), `request_id_reused`, `unavailable`,
                `quota_exceeded` (429: the principal's active requests are at the limit, nothing
                is asked; a steering ask still steers the running request).
        """
        if attachments and on_busy == "steer":
            raise GatewayError.invalid_input(
                "a message with files cannot steer a running request: ask it with on_busy `enqueue`"
            )
        if on_busy == "steer" and mode == "interrupt":
            steered = await self._steer_running(thread, text, source, "interrupt")
            if steered is not None:
                return steered
        given = request_id
        if self._active.enabled:
            request_id = request_id or new_id()  # the slot's holder: the request this ask makes
            steered = await self._hold(thread, request_id, text, source, on_busy, mode)
            if steered is not None:
                return steered
        asked: str | AskInput = text
        if thread.agent_version is not None:  # the version's config, on this request only
            asked = ask_input(
                text,
                request_id=request_id,
                on_busy=on_busy,
                expected_last_request=expected_last_request,
                webhook_url=webhook_url,
            ).model_copy(
                update={
                    "agent_version": thread.agent_version,
                    "version_config": thread.config,
                    "attachments": list(attachments),
                }
            )
        try:
            with temporal_reads():
                if not isinstance(asked, str):
                    accepted = await self.session(thread).ask(
                        asked, config=thread.config, agent_id=thread.agent
                    )
                else:
                    accepted = await self.session(thread).ask(
                        text,
                        config=thread.config,
                        agent_id=thread.agent,
                        request_id=request_id,
                        on_busy=on_busy,
                        expected_last_request=expected_last_request,
                        webhook_url=webhook_url,
                        attachments=list(attachments),
                    )
        except GatewayError:
            if request_id is not None:
                await self._active.release(thread.principal.name, thread.session_id, request_id)
            raise
        if request_id is not None and (
            accepted.request_id != request_id or accepted.disposition == "steered"
        ):
            await self._active.release(thread.principal.name, thread.session_id, request_id)
        if given is not None and accepted.request_id == given:
            await self._same_message(thread, given, text)
        return accepted

    async def _hold(
        self, thread: Thread, request_id: str, text: str, source: str | None, on_busy: OnBusy, mode: SteerMode
    ) -> AskAccepted | None:
        """Take the request's active slot; at the limit, a steering ask steers the running request.

        Raises:
            GatewayError: 429 `quota_exceeded` (nothing is asked), 503 `unavailable`.
        """
        try:
            await self._active.hold(thread.principal.name, thread.session_id, request_id)
        except GatewayError as refused:
            if refused.code != QUOTA_EXCEEDED or on_busy != "steer":
                raise
            steered = await self._steer_running(thread, text, source, mode)  # it makes no new request
            if steered is None:
                raise
            return steered
        return None

    async def _same_message(self, thread: Thread, request_id: str, text: str) -> None:
        """Refuse an ask whose request id names an earlier request with another message.

        The session answers a known request id with that request (a retried ask re-attaches);
        its record's query preview says whether the message is the same. The check is read
        after the ask: a new request's record always matches, so only a reused id is refused.
        When the record cannot be read (Temporal does not answer), the ask stands as the
        session answered it: refusing would tell the caller that nothing was asked.

        Raises:
            GatewayError: `request_id_reused` (nothing was asked).
        """
        try:
            record = await self.record(thread, request_id)
        except GatewayError:
            log.warning("could not read request %s of %s to check its message", request_id, thread.session_id)
            return
        if record.query_preview != text[:QUERY_PREVIEW_CHARS]:
            raise GatewayError.refused(
                REQUEST_ID_REUSED,
                f"request id {request_id!r} names an earlier request with another message: "
                "give a new id (nothing was asked)",
            )

    async def _steer_running(
        self, thread: Thread, text: str, source: str | None, mode: SteerMode
    ) -> AskAccepted | None:
        """Steer the running request (`mode`); None when nothing runs."""
        try:
            status = await self.status(thread)
        except GatewayError:
            return None  # no session yet: the ask starts it
        if status.active_request_id is None or status.active_run_workflow_id is None:
            return None
        ack = await self.session(thread).steer(
            text, mode=mode, expected_request_id=status.active_request_id, source=source
        )
        if ack.status != "queued":
            return None
        return AskAccepted(
            request_id=status.active_request_id,
            run_workflow_id=status.active_run_workflow_id,
            disposition="steered",
            input_id=ack.input_id,
        )

    # ---- controls of a running request -------------------------------------------------------

    async def running(self, thread: Thread, request_id: str) -> RequestRecord:
        """The record of a request that runs now (or awaits approval).

        Raises:
            GatewayError: 404 `not_found`; 400 `not_running` for a queued or an ended request.
        """
        record = await self.record(thread, request_id)
        if record.status != "running":
            raise GatewayError.refused(NOT_RUNNING, f"this request has ended ({record.status})")
        if (await self.status(thread)).active_request_id != request_id:
            record = await self.record(thread, request_id)
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
            ack = await self.session(thread).steer(
                text, expected_request_id=request_id, source=source, mode=mode
            )
        return _accepted(ack, "the steer was refused")

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
            pending = await self.pending(record.run_workflow_id)
            if not pending:
                raise GatewayError.refused(UNKNOWN_CALL, "this request has no call awaiting approval")
            call_id = pending[0].call_id
        with temporal_reads():
            ack = await self.session(thread).approve(
                call_id,
                approved=decision.approved,
                reason=decision.reason,
                arguments=decision.arguments,
                approver=approver,
            )
        return _accepted(ack, "the decision was refused")

    async def cancel(self, thread: Thread, request_id: str, *, reason: str) -> RequestState:
        """Cancel the running request's run, wait for it to end `cancelled`; its state then.

        Raises:
            GatewayError: `not_found`, `not_running` (queued: nothing runs yet; or ended).
        """
        record = await self.running(thread, request_id)
        run = self._ctx.runs.get(record.run_workflow_id)
        with temporal_reads():
            ack = await run.cancel(reason=reason)
        _accepted(ack, "the request could not be cancelled")
        result: RunResult | None = None
        with contextlib.suppress(RejectedError, RPCError):
            result = await run.result()
        return await self.settled(thread, request_id, result)

    # ---- the thread ----------------------------------------------------------------------------

    async def fork(
        self, thread: Thread, *, seq: int | None = None, new_thread_id: str | None = None
    ) -> Forked:
        """A new thread of the caller's, starting from `thread` as it stood after entry `seq` (default: now).

        Raises:
            GatewayError: `not_found` (checked first: a missing thread is never a fork's own
                refusal), `invalid_input` (a bad or taken `new_thread_id`, or a default fork id
                that is not a thread id: pass one), `seq_out_of_range`.
        """
        await self.status(thread)
        new_id = await fork_session_id(
            self._ctx.client, thread.principal, thread.agent, thread.thread_id, new_thread_id or None
        )
        with temporal_reads():
            forked = await self.session(thread).fork(seq=seq, session_id=new_id)
        owned = parse_session_id(thread.principal, forked.session_id)
        assert owned is not None, "the gateway names every fork with a thread id"
        new = Thread(thread.principal, owned[0], owned[1], forked.session_id, thread.config)
        return Forked(new, forked.forked_from.seq)

    async def rename(self, thread: Thread, title: str) -> str:
        """Name the thread (its listings' `title`); the title as kept.

        Raises:
            GatewayError: `not_found` (checked first), `invalid_input` (blank, several lines),
                `payload_too_large` (over `MAX_TITLE_CHARS`).
        """
        await self.status(thread)
        with temporal_reads():
            return await self.session(thread).rename(title)

    async def reset(self, thread: Thread, *, reason: str | None = None) -> Ack:
        """Start the conversation afresh (`applied`, or `deferred` while a request runs).

        Raises:
            GatewayError: `not_found` (checked first), or the session's refusal.
        """
        await self.status(thread)
        with temporal_reads():
            ack = await self.session(thread).reset_thread(reason=reason)
        return _accepted(ack, "the reset was refused")

    async def erase(self, thread: Thread, *, memories: bool = False) -> Erased:
        """Erase the thread: its session and runs (not its forks), with `memories` its memory writes.

        What is deleted, and in which order: `gateway.core.erase`.

        Raises:
            GatewayError: `not_found` (nothing is deleted), `forbidden` (`memories` without
                `memory:write`), `unavailable`.
        """
        return await erase_thread(self._ctx, self._store(), thread, memories=memories)

    async def erase_principal(self, principal: str) -> ErasedPrincipal:
        """Erase everything `principal` has: schedules, threads, memory items (`gateway.core.erase`).

        Raises:
            GatewayError: `unavailable` (ask again: it finishes what is left).
        """
        return await erase_principal(self._ctx, self._store(), principal)

    def _store(self) -> Memory:
        """The gateway's memory-store client (opened on first use)."""
        if self._memory is None:
            self._memory = Memory(self._ctx.settings.memory_store_url)
        return self._memory

    async def set_webhook(self, thread: Thread, webhook_url: str | None) -> SessionStatus:
        """Set (None: clear) the thread's default webhook for the requests asked from now on.

        Raises:
            GatewayError: `not_found` (checked first), `invalid_input` naming `webhook_url` (the
                deployment's allow-list refuses it; nothing changed).
        """
        await self.status(thread)
        with temporal_reads():
            ack = await self.session(thread).set_webhook(webhook_url)
        _accepted(ack, "the webhook was refused")
        with temporal_reads():
            return await self.session(thread).status()

    # ---- waiting -------------------------------------------------------------------------------

    async def until_started(self, thread: Thread, request_id: str) -> None:
        """Wait while a queued request waits for the ones before it (returns at once otherwise).

        The hub has no event for a queued request's start (it follows runs, and this one's run
        does not exist yet), so the session is asked, backing off to `QUEUED_POLL_S[-1]`.
        """
        polls = 0
        while True:
            status = await self.status(thread)
            if status.active_request_id == request_id:
                return
            if (await self.record(thread, request_id)).status != "running":
                return
            await asyncio.sleep(QUEUED_POLL_S[min(polls, len(QUEUED_POLL_S) - 1)])
            polls += 1

    async def recorded(self, thread: Thread, request_id: str) -> RequestRecord:
        """The request's record once its session has recorded its run's end (or after `SETTLE_S`, as it is).

        The run ends first and its session records that a moment later: waiting here makes every
        read after (`state`, the thread's history, `tasks/get`) agree with the end.
        """
        record = await self.record(thread, request_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_S):
                polls = 0
                while record.status == "running":
                    await _pause(polls)
                    polls += 1
                    record = await self.record(thread, request_id)
        return record

    async def settled(self, thread: Thread, request_id: str, result: RunResult | None = None) -> RequestState:
        """The state of a request whose run has ended (`result`), once its session has recorded the end."""
        record = await self.recorded(thread, request_id)
        if record.status == "running":
            return await self.state(thread, request_id, result)
        return await self._ended(record, result)

    async def wait(
        self,
        thread: Thread,
        request_id: str,
        wait_s: float,
        report: Report | None = None,
        *,
        run_id: str | None = None,
    ) -> RequestState:
        """Wait up to `wait_s` for the request to end or await approval, handing its text to `report`.

        `run_id`: the run of a request just started (its state need not be read first). Returns
        the request's state then (ended ones once their session has recorded the end).
        """
        wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
        queued = False
        if run_id is None or wait_s == 0:
            state = await self.state(thread, request_id)
            if state.status not in ("running", "queued") or wait_s == 0:
                return state
            run_id, queued = state.run_workflow_id, state.status == "queued"
        with contextlib.suppress(TimeoutError, RPCError):  # the hub lost the run: read where it stands
            async with asyncio.timeout(wait_s):
                if queued:
                    await self.until_started(thread, request_id)
                async for item in follow_run(self._ctx, run_id):
                    if isinstance(item, RunEnd):
                        return await self.settled(thread, request_id, item.result)
                    event = item.event
                    if isinstance(event, DeltaEvent):
                        if event.text and report is not None:
                            await report(event.text)
                    elif event.event.kind == "approval_requested" and await self._still_awaiting(run_id):
                        break
        return await self.state(thread, request_id)


async def _pause(polls: int) -> None:
    """The wait before the next ask of a session that has not moved on yet (`SETTLE_POLL_S`)."""
    await asyncio.sleep(SETTLE_POLL_S[min(polls, len(SETTLE_POLL_S) - 1)])


def ended_state(request_id: str, run_workflow_id: str, result: RunResult) -> RequestState:
    """The state of a request whose run ended with `result` (the run says so before its session does)."""
    outcome = result.outcome
    status: RequestStatus = outcome.status if outcome.status in ("completed", "cancelled") else "failed"
    error = outcome.error
    return RequestState(
        request_id=request_id,
        run_workflow_id=run_workflow_id,
        status=status,
        usage=outcome.usage,
        answer=result.answer if status == "completed" else None,
        output=result.output if status == "completed" else None,
        error_code=error.type if error is not None else None,
        error_message=error.message if error is not None else None,
    )


def _state(record: RequestRecord, status: RequestStatus, **fields: object) -> RequestState:
    return RequestState(
        request_id=record.request_id,
        run_workflow_id=record.run_workflow_id,
        status=status,
        query_preview=record.query_preview,
        usage=record.outcome.usage,
        agent_version=record.agent_version,
        **fields,  # pyright: ignore[reportArgumentType]
    )


def _accepted(ack: Ack, refused: str) -> Ack:
    """`ack`, unless it is a refusal (then raised as a `GatewayError` with its code)."""
    if ack.status == "rejected":
        raise GatewayError.refused(ack.reason or NOT_RUNNING, ack.message or refused)
    return ack
