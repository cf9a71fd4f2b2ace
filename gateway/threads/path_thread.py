"""The thread a `/api/threads/{agent}/{thread}/...` route names, as the request's principal's."""

from __future__ import annotations

from starlette.requests import Request

from gateway.context import GatewayContext
from gateway.core import Thread, open_thread
from gateway.http_input import principal_of


async def thread_in_path(ctx: GatewayContext, request: Request) -> Thread:
    """The principal's thread named by the path's `agent` and `thread` (checked by `open_thread`)."""
    params = request.path_params
    return await open_thread(ctx, principal_of(request), params["agent"], params["thread"])
