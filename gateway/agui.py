"""AG-UI 1.0 over resumable SSE: `POST /agui/{agent}` and `GET /agui/{agent}/threads/{threadId}/events`.

A thread is a session (`gateway.owners`), the last user message the ask, and the AG-UI run id the
request's id (so a retried POST re-attaches instead of asking twice). `forwardedProps` carries
the busy policy: a second message to a busy thread gets the session's own answer, as a CUSTOM
`ask` event (`started`, `queued`, `steered`, `interrupted`, `rolled_back`) or, refused, a CUSTOM
`ask_refused` and RUN_ERROR with its code (`busy`, `stale`, ...). `resume` entries decide the
calls an `interrupt` outcome named, and the stream continues after them. The GET re-attaches: with
`Last-Event-ID` (or `?after=`) right after that event, else to the running request (or the last).
"""

from __future__ import annotations

from ag_ui.core import RunAgentInput
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from contracts import AgentConfig
from contracts.errors import INVALID_INPUT, PAYLOAD_TOO_LARGE
from contracts.session import SessionStatus
from gateway.agui_input import ask_props, decisions, last_user_text, parse_run_input, request_id_for
from gateway.agui_render import START, Position, parse_event_id
from gateway.agui_stream import DONE_CHARS, StreamSpec, custom, stream_run
from gateway.context import GatewayContext, agent_config
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_json
from gateway.identity.scopes import APPROVE, require
from gateway.owners import session_id
from gateway.single_flight import shared

__all__ = ["routes", "session_status"]

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
PING_S = 15


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The AG-UI routes on `ctx`."""

    async def run(request: Request) -> EventSourceResponse:
        principal = principal_of(request)
        agent = request.path_params["agent"]
        config = agent_config(ctx, agent)
        run_input = parse_run_input(await read_json(request))
        session = ctx.sessions.get(session_id(principal, agent, run_input.thread_id))
        if run_input.resume:
            require(principal, APPROVE)
            spec = await _resume(ctx, session, run_input, principal.name)
        else:
            spec = await _ask(ctx, session, agent, config, run_input)
        return _response(ctx, session, spec)

    async def events(request: Request) -> EventSourceResponse:
        principal = principal_of(request)
        agent = request.path_params["agent"]
        agent_config(ctx, agent)
        thread_id = request.path_params["thread_id"]
        session = ctx.sessions.get(session_id(principal, agent, thread_id))
        status = await session_status(session)
        last = request.headers.get("last-event-id") or request.query_params.get("after")
        spec = await _reattach(session, status, thread_id, last)
        return _response(ctx, session, spec)

    return [
        Route("/agui/{agent}", run, methods=["POST"]),
        Route("/agui/{agent}/threads/{thread_id}/events", events, methods=["GET"]),
    ]


def _response(ctx: GatewayContext, session: SessionHandle, spec: StreamSpec) -> EventSourceResponse:
    return EventSourceResponse(stream_run(ctx, session, spec), sep="\n", ping=PING_S, headers=SSE_HEADERS)


async def session_status(session: SessionHandle) -> SessionStatus:
    """The session's status; 404 `not_found` when it does not exist (another principal's alike).

    Raises:
        GatewayError: 404 `not_found`.
    """
    try:
        return await shared((session.workflow_id, "status"), session.status)
    except RPCError as error:
        if error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
            raise not_found() from None
        raise


async def _ask(
    ctx: GatewayContext, session: SessionHandle, agent: str, config: AgentConfig, run_input: RunAgentInput
) -> StreamSpec:
    """Ask the session the last user message under the busy policy of `forwardedProps`."""
    props = ask_props(run_input)
    query = last_user_text(run_input)
    request_id = request_id_for(run_input.run_id)
    spec = StreamSpec(thread_id=run_input.thread_id, run_id=run_input.run_id, request_id=request_id)
    if props.on_busy == "steer" and props.mode == "interrupt":
        steered = await _steer_interrupting(ctx, session, spec, query)
        if steered is not None:
            return steered
    try:
        accepted = await session.ask(
            query,
            config=config,
            agent_id=agent,
            request_id=request_id,
            on_busy=props.on_busy,
            expected_last_request=props.expected_last_request,
        )
    except RejectedError as rejection:
        if rejection.code in (INVALID_INPUT, PAYLOAD_TOO_LARGE):
            raise GatewayError(
                413 if rejection.code == PAYLOAD_TOO_LARGE else 400, rejection.code, rejection.message
            ) from None
        spec.refusal = rejection
        spec.preamble = [custom("ask_refused", {"reason": rejection.code, "message": rejection.message})]
        return spec
    disposition = "queued" if accepted.disposition == "enqueued" else accepted.disposition
    ack = {"disposition": disposition, **accepted.model_dump(mode="json", exclude_none=True)}
    ack["disposition"] = disposition
    spec.preamble = [custom("ask", ack)]
    spec.request_id, spec.run_workflow_id = accepted.request_id, accepted.run_workflow_id
    if accepted.disposition == "steered":
        spec.origin = await _trace_head(ctx, accepted.run_workflow_id)
        spec.after = Position(spec.origin, 0, DONE_CHARS)
    spec.wait_until_started = accepted.disposition == "enqueued"
    return spec


async def _steer_interrupting(
    ctx: GatewayContext, session: SessionHandle, spec: StreamSpec, query: str
) -> StreamSpec | None:
    """Steer the running request with `mode="interrupt"`; None when nothing runs (then it is asked)."""
    try:
        status = await session.status()
    except RPCError:
        return None
    if status.active_request_id is None or status.active_run_workflow_id is None:
        return None
    head = await _trace_head(ctx, status.active_run_workflow_id)
    ack = await session.steer(query, mode="interrupt", expected_request_id=status.active_request_id)
    if ack.status != "queued":
        return None
    spec.request_id, spec.run_workflow_id = status.active_request_id, status.active_run_workflow_id
    spec.origin, spec.after = head, Position(head, 0, DONE_CHARS)
    value = {
        "disposition": "steered",
        "mode": ack.mode,
        "input_id": ack.input_id,
        "request_id": spec.request_id,
    }
    spec.preamble = [custom("ask", value)]
    return spec


async def _trace_head(ctx: GatewayContext, run_workflow_id: str) -> int:
    """The seq of the run's newest trace event (-1 before its first)."""
    trace = await ctx.runs.get(run_workflow_id).trace()
    return max((event.seq for event in trace.events), default=-1)


async def _resume(
    ctx: GatewayContext, session: SessionHandle, run_input: RunAgentInput, approver: str
) -> StreamSpec:
    """Decide the interrupted calls, then continue the request right after their approval requests."""
    chosen = decisions(run_input)
    status = await session_status(session)
    spec = StreamSpec(
        thread_id=run_input.thread_id, run_id=run_input.run_id, request_id=request_id_for(run_input.run_id)
    )
    if status.active_request_id is None or status.active_run_workflow_id is None:
        spec.refusal = RejectedError("idle", "the thread has no running request awaiting a decision")
        return spec
    spec.request_id, spec.run_workflow_id = status.active_request_id, status.active_run_workflow_id
    acks: list[dict[str, object]] = []
    for decision in chosen:
        ack = await session.approve(
            decision.call_id,
            approved=decision.approved,
            reason=decision.reason,
            arguments=decision.arguments,
            approver=approver,
        )
        acks.append(ack.model_dump(mode="json", exclude_none=True))
        if ack.status == "rejected":
            spec.preamble = [custom("approval_refused", acks[-1])]
            spec.refusal = RejectedError(
                ack.reason or INVALID_INPUT, ack.message or "the decision was refused"
            )
            return spec
    spec.preamble = [custom("approvals", acks)]
    trace = await ctx.runs.get(spec.run_workflow_id).trace()
    decided = {d.call_id for d in chosen}
    seqs = [e.seq for e in trace.events if e.kind == "approval_requested" and e.call_id in decided]
    spec.after = Position(max(seqs), 0, DONE_CHARS) if seqs else START
    return spec


async def _reattach(
    session: SessionHandle, status: SessionStatus, thread_id: str, last: str | None
) -> StreamSpec:
    """Continue after event `last`, else follow the running request (or the last one) from its start."""
    records = await shared((session.workflow_id, "requests"), session.requests)
    if last:
        request_id, after = parse_event_id(last)
        record = next((r for r in records if r.request_id == request_id), None)
        if record is None:
            raise not_found("event id in this thread")
        return StreamSpec(
            thread_id=thread_id,
            run_id=request_id,
            request_id=request_id,
            run_workflow_id=record.run_workflow_id,
            after=after,
            run_started=False,
            wait_until_started=True,
        )
    request_id = status.active_request_id or (records[-1].request_id if records else None)
    record = next((r for r in records if r.request_id == request_id), None)
    if record is None:
        raise not_found("request in this thread")
    return StreamSpec(
        thread_id=thread_id,
        run_id=record.request_id,
        request_id=record.request_id,
        run_workflow_id=record.run_workflow_id,
    )
