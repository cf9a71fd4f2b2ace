"""What the `agents:admin` scope may do: read every principal's threads, and erase a principal.

    GET    /api/admin/threads[?principal=NAME]                 sessions of every principal (at most 100)
    GET    /api/admin/threads/{principal}/{agent}/{thread}     one thread, as its owner sees it
    DELETE /api/admin/principals/{principal}                   everything the principal has, erased

The thread view is the owner's (`GET /api/threads/{agent}/{thread}`, `gateway.threads.api`,
handed in by `gateway.threads.routes`), read on the owner's behalf, and the listing is the
owner's listing (`gateway.core.listing`) over every principal. The erase is the request core's
(`gateway.core.erase.erase_principal`). The guard checks the scope and writes an audit line for
each read (`admin_read`) and each erase (`erase`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.context import GatewayContext
from gateway.core import RequestCore
from gateway.core.listing import list_threads
from gateway.errors import GatewayError
from gateway.identity.principal import PRINCIPAL_PATTERN, Principal
from gateway.threads.api import OWNER_THREAD_PATH

__all__ = ["routes"]


def routes(ctx: GatewayContext, owner_routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The admin's routes; `owner_routes` hold the owner's thread view (`OWNER_THREAD_PATH`)."""
    core = RequestCore(ctx)
    owner_view: Callable[[Request], Awaitable[Response]] = next(
        route.endpoint
        for route in owner_routes
        if isinstance(route, Route) and route.path == OWNER_THREAD_PATH
    )

    async def threads(request: Request) -> Response:
        owner = request.query_params.get("principal")
        listed = await list_threads(ctx, _principal_name(owner) if owner else None)
        return JSONResponse({"threads": [thread.json(with_principal=True) for thread in listed]})

    async def thread(request: Request) -> Response:
        owner = _principal_name(request.path_params["principal"])
        request.state.principal = Principal(
            owner, frozenset()
        )  # read as the owner; the admin's scope was checked
        return await owner_view(request)

    async def erase_principal(request: Request) -> Response:
        name = _principal_name(request.path_params["principal"])
        erased = await core.threads.erase_principal(name)
        return JSONResponse({"principal": name, "deleted": erased.json()})

    return [
        Route("/api/admin/threads", threads, methods=["GET"]),
        Route("/api/admin/threads/{principal}/{agent}/{thread}", thread, methods=["GET"]),
        Route("/api/admin/principals/{principal}", erase_principal, methods=["DELETE"]),
    ]


def _principal_name(name: str) -> str:
    if not PRINCIPAL_PATTERN.fullmatch(name):
        raise GatewayError.invalid_input(f"a principal name must match {PRINCIPAL_PATTERN.pattern}")
    return name
