"""What the `agents:admin` scope may do: read every principal's threads (never change them).

    GET /api/admin/threads[?principal=NAME]                 sessions of every principal (at most 100)
    GET /api/admin/threads/{principal}/{agent}/{thread}     one thread, as its owner sees it

The thread view is the owner's (`GET /api/threads/{agent}/{thread}` of the chat page's API,
`gateway.chat.api`, handed in by `gateway.app`: identity is a shared part and imports no adapter),
read on the owner's behalf; nothing here writes. The guard checks the scope and writes an audit
line for each read (`admin_read`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.session import SESSION_WORKFLOW_TYPE
from gateway.auth import Principal
from gateway.context import GatewayContext
from gateway.errors import GatewayError
from gateway.owners import PREFIX, parse_session_id
from gateway.settings import PRINCIPAL_PATTERN

__all__ = ["routes"]

MAX_LISTED = 100
OWNER_THREAD_PATH = "/api/threads/{agent}/{thread}"


def routes(ctx: GatewayContext, owner_routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The admin's read-only routes; `owner_routes` hold the owner's thread view (`OWNER_THREAD_PATH`)."""
    owner_view: Callable[[Request], Awaitable[Response]] = next(
        route.endpoint
        for route in owner_routes
        if isinstance(route, Route) and route.path == OWNER_THREAD_PATH
    )

    async def threads(request: Request) -> Response:
        owner = request.query_params.get("principal")
        prefix = f"{PREFIX}/{_principal_name(owner)}/" if owner else f"{PREFIX}/"
        query = (
            f"WorkflowType = '{SESSION_WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '{prefix}' "
            "AND ExecutionStatus != 'ContinuedAsNew'"
        )
        listed: dict[str, dict[str, Any]] = {}
        async for execution in ctx.client.list_workflows(query, limit=MAX_LISTED):
            name = execution.id.split("/")[1] if execution.id.count("/") >= 3 else ""
            if not PRINCIPAL_PATTERN.match(name) or execution.id in listed:
                continue
            owned = parse_session_id(Principal(name), execution.id)
            if owned is None:
                continue
            listed[execution.id] = {
                "principal": name,
                "agent": owned[0],
                "thread_id": owned[1],
                "session_id": execution.id,
                "status": execution.status.name.lower() if execution.status else "unknown",
                "started_at": execution.start_time.isoformat(),
            }
        return JSONResponse({"threads": list(listed.values())})

    async def thread(request: Request) -> Response:
        owner = _principal_name(request.path_params["principal"])
        request.state.principal = Principal(
            owner, frozenset()
        )  # read as the owner; the admin's scope was checked
        return await owner_view(request)

    return [
        Route("/api/admin/threads", threads, methods=["GET"]),
        Route("/api/admin/threads/{principal}/{agent}/{thread}", thread, methods=["GET"]),
    ]


def _principal_name(name: str) -> str:
    if not PRINCIPAL_PATTERN.match(name):
        raise GatewayError.invalid_input(f"a principal name must match {PRINCIPAL_PATTERN.pattern}")
    return name
