"""What the MCP tools do, over the typed client: ask, steer, approve, cancel, status, history, fork.

A `session` is the caller's thread id with an agent (`gateway.owners.session_id`); a request is
addressed by a handle `<agent>:<session>:<request id>`. Another principal's session or handle is
`not_found`, exactly like an unknown one. Every refusal is `McpRefusal` with a product error code.
`follow` waits for a request through the hub (one subscription per run, however many callers),
handing streamed text to `report` (the MCP progress notifications) until the request ends,
waits for an approval, or the caller's wait runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.service import RPCError

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from contracts.errors import NOT_FOUND, NOT_RUNNING, UNKNOWN_CALL
from contracts.run import RunResult
from contracts.session import RequestRecord
from contracts.stream import DeltaEvent
from conversation import MessageEntry
from gateway.a2a_stream import RunEnd, follow_run
from gateway.auth import Principal
from gateway.context import GatewayContext, agent_config
from gateway.errors import GatewayError
from gateway.owners import THREAD_ID_PATTERN, parse_session_id, session_id

__all__ = ["Handle", "McpRefusal", "Report", "cancel", "follow", "parse_handle", "request_state"]

Report = Callable[[str], Awaitable[None]]
MAX_WAIT_S = 600.0
SETTLE_S = 5.0
SETTLE_POLL_S = 0.005
"""How often `ask` asks the session whether it has recorded a run's end (a query: no history)."""


class McpRefusal(Exception):
    """A tool call refused with a product error code (docs/errors.md)."""

    def __init__(self, code: str, message: str) -> None:
        """A refusal `code` with a `message` safe to show."""
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Handle:
    """One request of one of the caller's sessions."""

    agent: str
    session: str
    request_id: str
    session_id: str

    def __str__(self) -> str:
        """The handle's text, as `ask` returns it."""
        return f"{self.agent}:{self.session}:{self.request_id}"


def not_found(what: str) -> McpRefusal:
    """The one answer for a thing that does not exist and one of another principal."""
    return McpRefusal(NOT_FOUND, f"no such {what}")


def session_of(ctx: GatewayContext, principal: Principal, agent: str, session: str) -> str:
    """The session id of the caller's `session` with `agent` (checks both names)."""
    try:
        agent_config(ctx, agent)
        return session_id(principal, agent, session)
    except GatewayError as error:
        raise McpRefusal(error.code, error.message) from None


def parse_handle(ctx: GatewayContext, principal: Principal, handle: str) -> Handle:
    """The caller's request `handle` (`not_found` for anything that is not one of theirs)."""
    parts = handle.split(":")
    if len(parts) != 3 or not THREAD_ID_PATTERN.match(parts[1]) or not parts[2]:
        raise not_found("handle")
    agent, session, request_id = parts
    if agent not in ctx.settings.agents:
        raise not_found("handle")
    return Handle(agent, session, request_id, session_id(principal, agent, session))


def handle_of_session(principal: Principal, agent: str, forked_session_id: str) -> str:
    """The caller's thread id of a session id of theirs (a fork's)."""
    parsed = parse_session_id(principal, forked_session_id)
    if parsed is None:
        raise not_found("session")
    return parsed[1]


async def record_of(session: SessionHandle, request_id: str) -> RequestRecord:
    """The request's record (`not_found` when the session or request does not exist)."""
    try:
        return await session.request(request_id)
    except (RejectedError, RPCError):
        raise not_found("handle") from None


async def request_state(ctx: GatewayContext, handle: Handle) -> dict[str, Any]:
    """Where the request stands: ended (answer, output, usage), awaiting approval, running or queued."""
    session = ctx.sessions.get(handle.session_id)
    record = await record_of(session, handle.request_id)
    base = _base(handle)
    if record.status == "running" and (await session.status()).active_request_id != handle.request_id:
        record = await record_of(session, handle.request_id)  # not active: waiting, or ended meanwhile
        if record.status == "running":
            return {**base, "status": "submitted"}
    if record.status != "running":
        return {**base, **await _ended(ctx, record)}
    pending = await _pending(ctx, record)
    if pending:
        return {**base, "status": "input_required", "pending_approvals": pending}
    return {**base, "status": "running"}


def _base(handle: Handle) -> dict[str, Any]:
    return {"handle": str(handle), "session": handle.session, "agent": handle.agent}


async def _ended(
    ctx: GatewayContext, record: RequestRecord, result: RunResult | None = None
) -> dict[str, Any]:
    """An ended request's state: its record's status, usage and error, and the run's answer and output."""
    state: dict[str, Any] = {"status": record.status, "usage": record.outcome.usage.model_dump(mode="json")}
    error = record.outcome.error
    if error is not None:
        state["error"] = {"code": error.type, "message": error.message}
    if record.status == "completed":
        if result is None:
            with contextlib.suppress(RejectedError, RPCError):
                result = await ctx.runs.get(record.run_workflow_id).result()
        if result is not None:
            state["answer"] = result.answer
            if result.output is not None:
                state["output"] = result.output
    return state


async def _pending(ctx: GatewayContext, record: RequestRecord) -> list[dict[str, Any]]:
    return await _pending_of_run(ctx, record.run_workflow_id)


async def _pending_of_run(ctx: GatewayContext, run_id: str) -> list[dict[str, Any]]:
    try:
        approvals = await ctx.runs.get(run_id).pending_approvals()
    except RPCError:
        return []
    return [{"call_id": p.call_id, "tool": p.name, "arguments": p.arguments} for p in approvals]


async def follow(
    ctx: GatewayContext, handle: Handle, wait_s: float, report: Report, *, started_run: str | None = None
) -> dict[str, Any]:
    """Wait up to `wait_s` for the request to end or await approval, reporting its text; its state then.

    `started_run`: the run of a request just started (its state need not be read first).
    """
    wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
    if started_run is None or wait_s == 0:
        state = await request_state(ctx, handle)
        if state["status"] != "running" or wait_s == 0:
            return state
    session = ctx.sessions.get(handle.session_id)
    record = await record_of(session, handle.request_id) if started_run is None else None
    run_id = started_run or (record.run_workflow_id if record is not None else "")
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait_s):
            async for item in follow_run(ctx, run_id):
                if isinstance(item, RunEnd):
                    record = await _settled(ctx, handle)
                    if record is None:
                        break
                    return {**_base(handle), **await _ended(ctx, record, item.result)}
                event = item.event
                if isinstance(event, DeltaEvent):
                    if event.text:
                        await report(event.text)
                elif event.event.kind == "approval_requested" and await _pending_of_run(ctx, run_id):
                    break
    return await request_state(ctx, handle)


async def _settled(ctx: GatewayContext, handle: Handle) -> RequestRecord | None:
    """The session's record of a request whose run has ended, once it says so (None: not within `SETTLE_S`).

    The run ends first and its session records that a moment later; `ask` returns only then, so
    that `status` and `history` called right after agree with its answer.
    """
    session = ctx.sessions.get(handle.session_id)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SETTLE_S):
            while (record := await record_of(session, handle.request_id)).status == "running":  # noqa: ASYNC110 - a query
                await asyncio.sleep(SETTLE_POLL_S)
            return record
    return None


async def approve(
    ctx: GatewayContext,
    principal: Principal,
    handle: Handle,
    decision: dict[str, Any],
) -> dict[str, Any]:
    """Decide a call of the request awaiting approval (the oldest, unless `call_id` names one)."""
    record = await record_of(ctx.sessions.get(handle.session_id), handle.request_id)
    call_id: str | None = decision.get("call_id")
    if call_id is None:
        pending = await _pending(ctx, record) if record.status == "running" else []
        if not pending:
            raise McpRefusal(UNKNOWN_CALL, "this request has no call awaiting approval")
        call_id = pending[0]["call_id"]
    ack = await ctx.runs.get(record.run_workflow_id).approve(
        str(call_id),
        approved=bool(decision.get("approved", True)),
        reason=decision.get("reason"),
        arguments=decision.get("arguments"),
        approver=principal.name,
    )
    if ack.status == "rejected":
        raise McpRefusal(ack.reason or "rejected", ack.message or "the decision was refused")
    return {"status": ack.status, "call_id": call_id, "handle": str(handle)}


async def cancel(ctx: GatewayContext, principal: Principal, handle: Handle) -> dict[str, Any]:
    """Cancel the request's run and wait for it to end `cancelled`; its state then.

    Only a request that runs (or awaits approval) can be cancelled: one waiting for its turn has
    no run yet, and an ended one nothing left to stop (`not_running` for both).
    """
    state = await request_state(ctx, handle)
    if state["status"] == "submitted":
        raise McpRefusal(NOT_RUNNING, "this request waits for its turn: nothing runs yet")
    if state["status"] not in ("running", "input_required"):
        raise McpRefusal(NOT_RUNNING, f"this request has ended ({state['status']})")
    record = await record_of(ctx.sessions.get(handle.session_id), handle.request_id)
    run = ctx.runs.get(record.run_workflow_id)
    ack = await run.cancel(reason=f"cancelled through MCP by {principal.name}")
    if ack.status == "rejected":
        raise McpRefusal(ack.reason or NOT_RUNNING, ack.message or "the request could not be cancelled")
    with contextlib.suppress(RejectedError, RPCError):
        await run.result()
    ended = await _settled(ctx, handle)
    return {**_base(handle), **await _ended(ctx, ended)} if ended else await request_state(ctx, handle)


async def history(ctx: GatewayContext, session_id_: str, limit: int) -> list[dict[str, Any]]:
    """The last `limit` messages of a session's thread (user, assistant and tool), oldest first."""
    session = ctx.sessions.get(session_id_)
    try:
        length = (await session.thread_page(0, 1)).length
        page = await session.thread_page(max(0, length - limit), limit)
    except (RejectedError, RPCError):
        raise not_found("session") from None
    found: list[dict[str, Any]] = []
    for entry in page.entries:
        if not isinstance(entry, MessageEntry):
            continue
        payload = entry.payload
        item: dict[str, Any] = {"seq": entry.seq, "role": payload.role, "content": payload.content}
        if payload.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in payload.tool_calls
            ]
        if payload.tool_call_id:
            item["tool_call_id"] = payload.tool_call_id
        if payload.request_id:
            item["request_id"] = payload.request_id
        found.append(item)
    return found
