"""A thread's default webhook over HTTP: where its requests call back when their ask names no URL.

    GET /api/threads/{agent}/{thread}/webhook   -> {"thread_id", "webhook_url", "agent_webhook_url"}
    PUT /api/threads/{agent}/{thread}/webhook   {"webhook_url": "https://..." | null} -> the same

`webhook_url` is the session's own default (`SessionHandle.set_webhook`); `agent_webhook_url`
the agent profile's (`AgentConfig.webhook_url`), used when neither the ask nor the thread names
one (the rule: `workflows.session.settings.webhook_for`). The thread must exist (its first request
creates it): else 404 `not_found`, as for another principal's thread. A URL the deployment's
allow-list refuses is 400 `invalid_input` naming `webhook_url`, and nothing changes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.session import SessionStatus
from gateway.context import GatewayContext
from gateway.core import RequestCore, Thread
from gateway.errors import GatewayError
from gateway.http_input import read_json
from gateway.threads.path_thread import thread_in_path

__all__ = ["routes"]


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The thread webhook API."""
    api = _ThreadWebhookApi(ctx)
    path = "/api/threads/{agent}/{thread}/webhook"
    return [Route(path, api.get, methods=["GET"]), Route(path, api.put, methods=["PUT"])]


def _body(thread: Thread, status: SessionStatus) -> dict[str, Any]:
    return {
        "thread_id": thread.thread_id,
        "webhook_url": status.webhook_url,
        "agent_webhook_url": status.config.webhook_url,
    }


class _ThreadWebhookApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._ctx = ctx
        self._core = RequestCore(ctx)

    async def get(self, request: Request) -> Response:
        thread = await thread_in_path(self._ctx, request)
        return JSONResponse(_body(thread, await self._core.reads.status(thread)))

    async def put(self, request: Request) -> Response:
        thread = await thread_in_path(self._ctx, request)
        body = await read_json(request)
        if not isinstance(body, dict) or "webhook_url" not in body:
            raise GatewayError.invalid_input('the body must be {"webhook_url": URL or null}')
        url: object = body["webhook_url"]  # pyright: ignore[reportUnknownVariableType]
        if url is not None and not isinstance(url, str):
            raise GatewayError.invalid_input("webhook_url: an http(s) URL, or null to clear it")
        return JSONResponse(_body(thread, await self._core.threads.set_webhook(thread, url)))
