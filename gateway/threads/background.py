"""Background requests over HTTP: post a message, get its id at once, read (or long-poll) where it stands.

    POST /api/threads/{agent}/{thread}/requests                  {"message", "on_busy"?, "webhook_url"?}
                                                                 -> 202 {"request_id", "disposition", ...}
    GET  /api/threads/{agent}/{thread}/requests/{request_id}?wait_s=N
                                                  -> {"request_id", "status", "answer"?, "error"?}

A thin adapter over the request core (`gateway.core`): `open_thread` names the caller's thread
(the session `gw/<principal>/<agent>/<thread>`; the first request creates it with the agent's
config), `RequestCore.asks.ask` asks under the busy policy (a refusal such as `busy` is 400 with its
code, the gateway's one status table), and `RequestCore.waits.wait` / `state` say where the request
stands. Another principal's thread, or an unknown request, is 404 `not_found`.

`status` is the core's: `queued` (waiting behind the active request), `running`,
`awaiting_approval` (a tool call waits for a decision: approve it from the chat page, AG-UI, A2A
or MCP), `completed` (with `answer`, and `output` when the agent has one), `failed` or
`cancelled` (with `error`: `{"code", "message"}`). `wait_s` (0 to `MAX_WAIT_S`) waits that long
for the request to end or to await approval before answering. A `webhook_url` gets the signed
`request.*` webhook when the request ends (and `approval.waiting` when it waits).
"""

from __future__ import annotations

import math
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.context import GatewayContext
from gateway.core import RequestCore, RequestState, parse_on_busy
from gateway.errors import GatewayError
from gateway.http_input import read_object
from gateway.threads.path_thread import thread_in_path

__all__ = ["MAX_WAIT_S", "routes"]

MAX_WAIT_S: Final = 30.0


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The background requests API."""
    api = _BackgroundApi(ctx)
    return [
        Route("/api/threads/{agent}/{thread}/requests", api.post, methods=["POST"]),
        Route("/api/threads/{agent}/{thread}/requests/{request_id}", api.get, methods=["GET"]),
    ]


def _wait_s(raw: str) -> float:
    try:
        wait_s = float(raw)
    except ValueError:
        wait_s = math.nan
    if not 0 <= wait_s <= MAX_WAIT_S:
        raise GatewayError.invalid_input(f"wait_s: a number of seconds from 0 to {MAX_WAIT_S:.0f}")
    return wait_s


def _state_body(state: RequestState) -> dict[str, Any]:
    body: dict[str, Any] = {"request_id": state.request_id, "status": state.status}
    if state.answer is not None:
        body["answer"] = state.answer
    if state.output is not None:
        body["output"] = state.output
    if state.error_code is not None:
        body["error"] = {"code": state.error_code, "message": state.error_message or ""}
    if state.agent_version is not None:
        body["agent_version"] = state.agent_version
    return body


class _BackgroundApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._ctx = ctx
        self._core = RequestCore(ctx)

    async def post(self, request: Request) -> Response:
        thread = await thread_in_path(self._ctx, request)
        fields = await read_object(request)
        message, webhook_url = fields.get("message"), fields.get("webhook_url")
        if not isinstance(message, str):
            raise GatewayError.invalid_input("message: a string is required")
        if webhook_url is not None and not isinstance(webhook_url, str):
            raise GatewayError.invalid_input("webhook_url: an http(s) URL")
        accepted = await self._core.asks.ask(
            thread,
            message,
            on_busy=parse_on_busy(fields.get("on_busy")),
            webhook_url=webhook_url,
            source=f"http:{thread.principal.name}",
        )
        return JSONResponse(accepted.model_dump(mode="json", exclude_none=True), status_code=202)

    async def get(self, request: Request) -> Response:
        thread = await thread_in_path(self._ctx, request)
        wait_s = _wait_s(request.query_params.get("wait_s", "0"))
        state = await self._core.waits.wait(thread, request.path_params["request_id"], wait_s)
        return JSONResponse(_state_body(state))
