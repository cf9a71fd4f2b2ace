"""AG-UI 1.0 over resumable SSE: `POST /agui/{agent}` and `GET /agui/{agent}/threads/{threadId}/events`.

A thread is a session (`gateway.owners`), the last user message the ask, and the AG-UI run id the
request's id (so a retried POST re-attaches instead of asking twice). `forwardedProps` carries
the busy policy: a second message to a busy thread gets the session's own answer, as a CUSTOM
`ask` event (`started`, `queued`, `steered`, `interrupted`, `rolled_back`) or, refused, a CUSTOM
`ask_refused` and RUN_ERROR with its code (`busy`, `stale`, ...). `resume` entries decide the
calls an `interrupt` outcome named, and the stream continues after them. The GET re-attaches: with
`Last-Event-ID` (or `?after=`) right after that event, else to the running request (or the last).
A `threadId` names a family of branches and reaches its newest (`gateway.core.branches`); messages
that edit the thread's (`gateway.agui.edits`) branch it there (docs/branches.md).
"""

from __future__ import annotations

from dataclasses import replace

from ag_ui.core import BaseEvent, RunAgentInput
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from contracts.errors import NOT_FOUND
from contracts.session import RequestRecord
from gateway.agui.edits import edited_message
from gateway.agui.input import ask_props, decisions, last_user_files, last_user_text, parse_run_input
from gateway.agui.render import DONE_CHARS, START, Position, opened_with, parse_event_id
from gateway.agui.stream import StreamSpec, custom, stream_run
from gateway.context import GatewayContext, resolve_agent
from gateway.core import RequestCore, Thread, open_thread, request_id_for
from gateway.core.attachments import take_attachments
from gateway.core.branches import branch, edit_at, head_of
from gateway.core.streams import HTTP_REFUSALS, PING_S, ask_streaming
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_json

__all__ = ["routes"]

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The AG-UI routes on `ctx`."""
    core = RequestCore(ctx)

    async def run(request: Request) -> EventSourceResponse:
        principal = principal_of(request)
        agent = request.path_params["agent"]
        await resolve_agent(ctx, agent)  # an unknown agent is named before the body is looked at
        run_input = parse_run_input(await read_json(request))
        thread = await head_of(core, await open_thread(ctx, principal, agent, run_input.thread_id))
        if run_input.resume:
            spec = await _resume(ctx, core, thread, run_input)
        else:
            spec = await _ask(ctx, core, thread, run_input)
        return _response(ctx, core, replace(spec, named=run_input.thread_id))

    async def events(request: Request) -> EventSourceResponse:
        principal = principal_of(request)
        named = await open_thread(
            ctx, principal, request.path_params["agent"], request.path_params["thread_id"]
        )
        thread = await head_of(core, named)
        last = request.headers.get("last-event-id") or request.query_params.get("after")
        spec = await _reattach(ctx, core, thread, last)
        return _response(ctx, core, replace(spec, named=named.thread_id))

    return [
        Route("/agui/{agent}", run, methods=["POST"]),
        Route("/agui/{agent}/threads/{thread_id}/events", events, methods=["GET"]),
    ]


def _response(ctx: GatewayContext, core: RequestCore, spec: StreamSpec) -> EventSourceResponse:
    return EventSourceResponse(stream_run(ctx, core, spec), sep="\n", ping=PING_S, headers=SSE_HEADERS)


async def _ask(
    ctx: GatewayContext, core: RequestCore, thread: Thread, run_input: RunAgentInput
) -> StreamSpec:
    """Ask the session the last user message under the busy policy of `forwardedProps`.

    When the client edited a message of the thread (`gateway.agui.edits`), the thread branches
    before it and the branch is asked the edited text.
    """
    props = ask_props(run_input)
    text, files = last_user_text(run_input), last_user_files(run_input)
    request_id = request_id_for(run_input.run_id)
    edited = await edited_message(core, thread, run_input)
    if edited is not None:
        point = await edit_at(core, thread, *edited)
        thread = await branch(ctx, core, thread, point, "edit", request_id)
        text = point.text
    attachments = await take_attachments(ctx, thread, files, request_id=request_id)
    asked = await ask_streaming(
        core,
        thread,
        text,
        request_id=request_id,
        policy=props,
        source=f"agui:{thread.principal.name}",
        attachments=attachments,
    )
    if asked.refusal is not None:
        refused = asked.refusal
        preamble = (custom("ask_refused", {"reason": refused.code, "message": refused.message}),)
        return StreamSpec(
            thread=thread,
            run_id=run_input.run_id,
            request_id=asked.request_id,
            preamble_kind="ask",
            preamble=preamble,
            refusal=refused,
        )
    steered = asked.origin is not None  # the running request's stream, from where the steer reached it
    ack = {**(asked.ack or {}), **({"mode": props.mode} if steered else {})}
    return StreamSpec(
        thread=thread,
        run_id=run_input.run_id,
        request_id=asked.request_id,
        run_workflow_id=asked.run_workflow_id,
        after=Position(asked.origin, 0, DONE_CHARS) if asked.origin is not None else START,
        origin=asked.origin,
        preamble_kind="steered" if steered else "ask",
        preamble=(custom("ask", ack),),
        wait_until_started=asked.queued,
    )


async def _resume(
    ctx: GatewayContext, core: RequestCore, thread: Thread, run_input: RunAgentInput
) -> StreamSpec:
    """Decide the interrupted calls, then continue the request right after their approval requests."""
    chosen = decisions(run_input)
    status = await core.reads.status(thread)
    request_id, run_workflow_id = status.active_request_id, status.active_run_workflow_id
    if request_id is None or run_workflow_id is None:
        return StreamSpec(
            thread=thread,
            run_id=run_input.run_id,
            request_id=request_id_for(run_input.run_id),
            preamble_kind="approvals",
            refusal=GatewayError.refused("idle", "the thread has no running request awaiting a decision"),
        )
    spec = StreamSpec(
        thread=thread,
        run_id=run_input.run_id,
        request_id=request_id,
        run_workflow_id=run_workflow_id,
        preamble_kind="approvals",
    )
    acks: list[dict[str, object]] = []
    for decision in chosen:
        try:
            ack = await core.controls.approve(thread, request_id, decision, approver=thread.principal.name)
        except GatewayError as refused:
            if refused.code in HTTP_REFUSALS - {NOT_FOUND}:
                raise
            refusal = {"status": "rejected", "call_id": decision.call_id, "reason": refused.code}
            preamble = (custom("approval_refused", {**refusal, "message": refused.message}),)
            return replace(spec, preamble=preamble, refusal=refused)
        acks.append(ack.model_dump(mode="json", exclude_none=True))
    # Right after the newest of the decided calls' approval requests (the run's start if none is found).
    asked_at = await core.reads.approvals_asked_at(run_workflow_id, {d.call_id for d in chosen})
    after = START if asked_at is None else Position(asked_at, 0, DONE_CHARS)
    return replace(spec, after=after, preamble=(custom("approvals", acks),))


async def _reattach(ctx: GatewayContext, core: RequestCore, thread: Thread, last: str | None) -> StreamSpec:
    """Continue after event `last`, else follow the running request (or the last one) from its start."""
    status = await core.reads.status(thread)
    records = await core.reads.records(thread)
    if last:
        request_id, after = parse_event_id(last)
        record = _find(records, request_id)
        if record is None:
            raise not_found("event id in this thread")
        opened = opened_with(after)
        kind, preamble = "", ()
        if opened is not None:  # right after RUN_STARTED: its preamble again, from durable facts
            after, kind = opened
            preamble = tuple(await _preamble_again(ctx, core, thread, record, after, kind))
        return StreamSpec(
            thread=thread,
            run_id=request_id,
            request_id=request_id,
            run_workflow_id=record.run_workflow_id,
            after=after,
            run_started=False,
            preamble_kind=kind,
            preamble=preamble,
            wait_until_started=True,
        )
    request_id = status.active_request_id or (records[-1].request_id if records else None)
    record = _find(records, request_id)
    if record is None:
        raise not_found("request in this thread")
    return StreamSpec(
        thread=thread,
        run_id=record.request_id,
        request_id=record.request_id,
        run_workflow_id=record.run_workflow_id,
    )


def _find(records: list[RequestRecord], request_id: str | None) -> RequestRecord | None:
    return next((r for r in records if r.request_id == request_id), None)


async def _preamble_again(
    ctx: GatewayContext, core: RequestCore, thread: Thread, record: RequestRecord, after: Position, kind: str
) -> list[BaseEvent]:
    """The preamble a stream sent after RUN_STARTED, derived again (marked `resumed`)."""
    if kind == "ask":
        state = await core.reads.state(thread, record.request_id)
        disposition = "queued" if state.status == "queued" else "started"
        value = {"disposition": disposition, "request_id": record.request_id, "resumed": True}
        return [custom("ask", {**value, "run_workflow_id": record.run_workflow_id})]
    if kind == "steered":
        return [custom("ask", {"disposition": "steered", "request_id": record.request_id, "resumed": True})]
    if kind == "approvals":
        trace = await ctx.runs.get(record.run_workflow_id).trace()
        decided = [
            {"status": "accepted", "call_id": e.call_id, "resumed": True}
            for e in trace.events
            if e.kind == "approval_decided" and e.seq > after.seq
        ]
        return [custom("approvals", decided)]
    return []
