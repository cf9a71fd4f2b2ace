"""Background requests over HTTP: post a message, get its id at once, read (or long-poll) its end.

    POST /api/threads/{agent}/{thread}/requests                  {"message", "on_busy"?, "webhook_url"?}
                                                                 -> 202 {"request_id", "disposition", ...}
    GET  /api/threads/{agent}/{thread}/requests/{request_id}?wait_s=N
                                                                 -> {"status", "answer"?, "error"?}

The thread is the caller's session `gw/<principal>/<agent>/<thread>` (`gateway.owners`; the
first request creates it with the agent's config); another principal's thread is 404
`not_found`. `status` is `queued` (waiting behind the active request), `running`, `completed`,
`failed` or `cancelled`; `wait_s` (0 to `MAX_WAIT_S`) waits that long for the end before
answering. A `webhook_url` gets the signed `request.*` webhook when the request ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Final, TypeVar, get_args

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from contracts.errors import UNKNOWN_REQUEST
from contracts.session import OnBusy, RequestResult
from gateway.context import GatewayContext, agent_config
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_json
from gateway.owners import session_id

__all__ = ["MAX_WAIT_S", "routes"]

T = TypeVar("T")
MAX_WAIT_S: Final = 30.0
ON_BUSY: Final = frozenset(get_args(OnBusy))


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The background requests API."""
    api = _BackgroundApi(ctx)
    return [
        Route("/api/threads/{agent}/{thread}/requests", api.post, methods=["POST"]),
        Route("/api/threads/{agent}/{thread}/requests/{request_id}", api.get, methods=["GET"]),
    ]


async def _called(call: Awaitable[T], what: str = "thread") -> T:
    """`await call`: a missing session (or request) is 404 `not_found`, a refusal 400 with its code."""
    try:
        return await call
    except RejectedError as refused:
        if refused.code == UNKNOWN_REQUEST:
            raise not_found("request") from None
        status = 409 if refused.code in ("busy", "ask_queue_full", "stale") else 400
        raise GatewayError(status, refused.code, refused.message) from None
    except (RPCError, WorkflowQueryFailedError) as error:
        if not isinstance(error, RPCError) or error.status == RPCStatusCode.NOT_FOUND:
            raise not_found(what) from None
        raise


def _result_body(result: RequestResult) -> dict[str, Any]:
    body: dict[str, Any] = {"request_id": result.request_id, "status": result.status}
    if result.result is not None:
        body["answer"] = result.result
    if result.outcome.error is not None:
        body["error"] = result.outcome.error.model_dump(mode="json")
    return body


class _BackgroundApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._ctx = ctx

    def _session(self, request: Request) -> tuple[str, SessionHandle]:
        principal = principal_of(request)
        agent = request.path_params["agent"]
        agent_config(self._ctx, agent)
        return agent, self._ctx.sessions.get(session_id(principal, agent, request.path_params["thread"]))

    async def post(self, request: Request) -> Response:
        agent, session = self._session(request)
        body = await read_json(request)
        if not isinstance(body, dict):
            raise GatewayError.invalid_input("the body must be a JSON object")
        fields: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]
        message, on_busy, webhook_url = (
            fields.get("message"),
            fields.get("on_busy", "reject"),
            fields.get("webhook_url"),
        )
        if not isinstance(message, str):
            raise GatewayError.invalid_input("message: a string is required")
        if on_busy not in ON_BUSY:
            raise GatewayError.invalid_input(f"on_busy: one of {', '.join(sorted(ON_BUSY))}")
        if webhook_url is not None and not isinstance(webhook_url, str):
            raise GatewayError.invalid_input("webhook_url: an http(s) URL")
        accepted = await _called(
            session.ask(
                message,
                config=agent_config(self._ctx, agent),
                agent_id=agent,
                on_busy=on_busy,
                webhook_url=webhook_url,
            )
        )
        return JSONResponse(accepted.model_dump(mode="json", exclude_none=True), status_code=202)

    async def get(self, request: Request) -> Response:
        _, session = self._session(request)
        request_id = request.path_params["request_id"]
        wait = request.query_params.get("wait_s", "0")
        try:
            wait_s = float(wait)
        except ValueError:
            wait_s = -1.0
        if not 0 <= wait_s <= MAX_WAIT_S:
            raise GatewayError.invalid_input(f"wait_s: a number of seconds from 0 to {MAX_WAIT_S:.0f}")
        record = await _called(session.request(request_id), "request")
        if record.finished_at is None and wait_s > 0:
            try:
                result = await asyncio.wait_for(session.await_result(request_id), wait_s)
            except TimeoutError:
                pass
            else:
                return JSONResponse(_result_body(result))
            record = await _called(session.request(request_id), "request")
        if record.finished_at is not None:
            return JSONResponse(_result_body(await _called(session.await_result(request_id), "request")))
        active = (await _called(session.status())).active_request_id
        status = "running" if active == request_id else "queued"
        return JSONResponse({"request_id": request_id, "status": status})
