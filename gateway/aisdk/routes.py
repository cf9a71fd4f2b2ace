"""The AI SDK's UI message stream (`useChat`): `POST /ai-sdk/{agent}`, `GET /ai-sdk/{agent}/{id}/stream`.

The POST reads the SDK's chat request (`gateway.aisdk.chat_request`): the chat's `id` is the
thread, the last user message the ask (its id the request's, so a retried POST re-attaches), or
the decisions an assistant message carries on calls awaiting approval (its id, the request's).
It answers with the request's run as UI message chunks (`gateway.aisdk.chunks`), followed
through the hub from the run's start; a stream of decisions continues the request right after
their approval requests, and a steering ask continues the running request from where it stood.
The stream's `start` carries what the gateway did with the ask in `messageMetadata`
(`disposition`: `started`, `queued`, `steered`, `interrupted`, `rolled_back`; `request_id`,
`run_workflow_id`). A stream ends with `finish`: `stop` (answered), `tool-calls` (the request
waits for approval), `other` (cancelled) or `error` (failed, or refused by the session: `busy`,
`stale`, ... with `messageMetadata.refused`; nothing was asked).

The chat id names a family of branches and reaches its newest (`gateway.core.branches.head_of`):
`regenerate-message` and the SDK's edit (`sendMessage` with `messageId`) fork the thread and
ask there (docs/branches.md); refusals of those (`busy`, `nothing_to_regenerate`,
`unknown_message`) are HTTP 400 errors, with nothing forked.

The GET is the SDK's resume route: the running request's stream from its start, or 204 when the
thread runs nothing. Refusals before any stream (a bad body, an unknown agent or thread, another
principal's thread, Temporal not answering) are the gateway's JSON errors, as on AG-UI. The SDK
has no cancel: `stop()` ends the client's read, and the request goes on (as on AG-UI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from pydantic import JsonValue
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from temporalio.service import RPCError

from contracts.errors import NOT_FOUND, UNAVAILABLE, UNKNOWN_MESSAGE
from gateway.aisdk.chat_request import ChatRequest, parse_chat_request
from gateway.aisdk.chunks import DONE, UI_MESSAGE_STREAM_HEADERS, Chunk, RequestChunks, error_chunks, sse
from gateway.context import GatewayContext, resolve_agent
from gateway.core import (
    Decision,
    Ended,
    Paused,
    RequestCore,
    RequestState,
    Thread,
    open_thread,
    request_id_for,
)
from gateway.core.attachments import take_attachments
from gateway.core.branches import branch, edit_at, head_of, regenerate_at
from gateway.core.streams import HTTP_REFUSALS, LOST, PING_S, ask_streaming
from gateway.errors import GatewayError
from gateway.http_input import principal_of, read_json

__all__ = ["routes"]

HEADERS = {k: v for k, v in UI_MESSAGE_STREAM_HEADERS.items() if k not in ("content-type", "connection")}
"""The SDK's stream headers (the response sets the content type and the connection itself)."""
LOST_HERE = f"{LOST}; resume the stream"


@dataclass(frozen=True)
class _Plan:
    """What one response streams: request `request_id` (run `run_workflow_id`) after trace seq `origin`.

    Built whole by the route that answers (`_ask`, `_decide`, `resume`), never written after.
    """

    thread: Thread
    request_id: str
    run_workflow_id: str = ""
    origin: int = -1
    after_requests: frozenset[str] = frozenset()
    """Calls whose approval requests the stream starts after (`origin` is found in the run's replay)."""
    metadata: dict[str, JsonValue] | None = None
    refusal: GatewayError | None = None
    wait_until_started: bool = False


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The AI SDK routes on `ctx`."""
    core = RequestCore(ctx)

    async def chat(request: Request) -> Response:
        agent = request.path_params["agent"]
        await resolve_agent(ctx, agent)  # an unknown agent is named before the body is looked at
        asked = parse_chat_request(await read_json(request))
        thread = await head_of(core, await open_thread(ctx, principal_of(request), agent, asked.thread_id))
        if asked.approvals:
            plan = await _decide(core, thread, asked)
        else:
            thread, asked = await _branched(ctx, core, thread, asked)
            plan = await _ask(ctx, core, thread, asked)
        return _response(ctx, core, plan)

    async def resume(request: Request) -> Response:
        named = await open_thread(
            ctx, principal_of(request), request.path_params["agent"], request.path_params["id"]
        )
        thread = await head_of(core, named)
        status = await core.reads.status(thread)  # another principal's thread, or none: 404 `not_found`
        if status.active_request_id is None or status.active_run_workflow_id is None:
            return Response(status_code=204)
        metadata: dict[str, JsonValue] = {"disposition": "resumed", "request_id": status.active_request_id}
        plan = _Plan(thread, status.active_request_id, status.active_run_workflow_id, metadata=metadata)
        return _response(ctx, core, plan)

    return [
        Route("/ai-sdk/{agent}", chat, methods=["POST"]),
        Route("/ai-sdk/{agent}/{id}/stream", resume, methods=["GET"]),
    ]


def _response(ctx: GatewayContext, core: RequestCore, plan: _Plan) -> EventSourceResponse:
    return EventSourceResponse(_stream(ctx, core, plan), sep="\n", ping=PING_S, headers=HEADERS)


async def _branched(
    ctx: GatewayContext, core: RequestCore, thread: Thread, asked: ChatRequest
) -> tuple[Thread, ChatRequest]:
    """A regenerate, or an edit, as a new branch of the thread and what it asks; else the ask as it is.

    A regenerate forks before the request `asked.message_id` names (default: the last) and asks
    its message again, with its files, with the same request id; an edit (the SDK named the last message's id
    in `messageId`) forks before that earlier user message when the text differs from the
    thread's, and asks the new text. An edit naming no message of the thread is a new message.

    Raises:
        GatewayError: `not_found`, `busy`, `nothing_to_regenerate`, `unknown_message` (nothing forked).
    """
    if asked.regenerate:
        point = await regenerate_at(core, thread, asked.message_id or None)
        new = await branch(ctx, core, thread, point, "regenerate", point.request_id)
        regenerated = replace(
            asked, ask=point.text, attached=point.attachments, message_id=point.request_id, regenerate=False
        )
        return new, regenerated
    if not asked.edits or asked.ask is None:
        return thread, asked
    try:
        point = await edit_at(core, thread, request_id_for(asked.message_id), asked.ask)
    except GatewayError as refused:
        if refused.code in (UNKNOWN_MESSAGE, NOT_FOUND):
            return thread, asked  # not an earlier message: asked as a new one
        raise
    if point.replaced == asked.ask:
        return thread, asked  # the same message again: the same request (a retried POST re-attaches)
    return await branch(ctx, core, thread, point, "edit", request_id_for(asked.message_id)), asked


async def _ask(ctx: GatewayContext, core: RequestCore, thread: Thread, asked: ChatRequest) -> _Plan:
    """Ask the last user message (its files taken in first) under the chat request's busy policy."""
    assert asked.ask is not None
    request_id = request_id_for(asked.message_id)
    taken = await take_attachments(ctx, thread, asked.files, request_id=request_id)
    attachments = [*asked.attached, *taken]
    streaming = await ask_streaming(
        core,
        thread,
        asked.ask,
        request_id=request_id,
        policy=asked,
        source=f"ai-sdk:{thread.principal.name}",
        attachments=attachments,
    )
    if streaming.refusal is not None:
        return _Plan(thread, streaming.request_id, refusal=streaming.refusal)
    return _Plan(
        thread,
        streaming.request_id,
        streaming.run_workflow_id,
        origin=streaming.origin if streaming.origin is not None else -1,  # steered: from where it stood
        metadata=streaming.ack,
        wait_until_started=streaming.queued,
    )


async def _decide(core: RequestCore, thread: Thread, asked: ChatRequest) -> _Plan:
    """Apply the decisions to the request the assistant message is; continue it after their requests."""
    record = await core.reads.record(thread, request_id_for(asked.message_id))
    for answer in asked.approvals:
        decision = Decision(approved=answer.approved, reason=answer.reason, call_id=answer.call_id)
        try:
            await core.controls.approve(thread, record.request_id, decision, approver=thread.principal.name)
        except GatewayError as refused:
            if refused.code in HTTP_REFUSALS:
                raise
            return _Plan(thread, record.request_id, record.run_workflow_id, refusal=refused)
    return _Plan(
        thread,
        record.request_id,
        record.run_workflow_id,
        after_requests=frozenset(a.call_id for a in asked.approvals),
        metadata={"disposition": "decided", "request_id": record.request_id},
    )


async def _stream(ctx: GatewayContext, core: RequestCore, plan: _Plan) -> AsyncIterator[bytes]:
    """The chunks of `plan` as SSE, then `[DONE]`."""
    encoder = RequestChunks(plan.request_id, origin=plan.origin, after_requests=plan.after_requests)
    if plan.refusal is not None:
        refused = error_chunks(plan.refusal.code, plan.refusal.message, refused=True)
        for chunk in [*encoder.start(), *refused]:
            yield sse(chunk)
        yield DONE
        return
    for chunk in encoder.start(plan.metadata):
        yield sse(chunk)
    try:
        async for chunk in _run_chunks(core, plan, encoder):
            yield sse(chunk)
    except (RPCError, GatewayError) as error:
        code = error.code if isinstance(error, GatewayError) else UNAVAILABLE
        message = error.message if isinstance(error, GatewayError) else LOST_HERE
        for chunk in error_chunks(code, message):
            yield sse(chunk)
    yield DONE


async def _run_chunks(core: RequestCore, plan: _Plan, encoder: RequestChunks) -> AsyncIterator[Chunk]:
    """The request's run as chunks, until it ends or pauses for approval."""
    async for step in core.waits.follow(
        plan.thread, plan.request_id, plan.run_workflow_id, encoder, queued=plan.wait_until_started
    ):
        if isinstance(step, Paused):
            for chunk in encoder.pause():
                yield chunk
        elif isinstance(step, Ended):
            if not encoder.ended:  # the run ended without a terminal event: what its record says
                for chunk in _ended(await core.waits.state_at(plan.thread, step)):
                    yield chunk
        else:
            yield step


def _ended(state: RequestState) -> list[Chunk]:
    if not state.ended:  # the session has not recorded the end in time: say so, the client resumes
        return error_chunks(UNAVAILABLE, LOST_HERE)
    if state.status == "completed":
        return [{"type": "finish", "finishReason": "stop"}]
    if state.status == "cancelled":
        return [{"type": "finish", "finishReason": "other", "messageMetadata": {"cancelled": True}}]
    return error_chunks(state.error_code or "request_failed", state.error_message or "the request failed")
