"""`/api/agents`: list the agents; make agents at run time, publish versions, move `latest`.

    GET  /api/agents {"agents": [names], "details": [{"name", "kind", "read_only", "latest"?}]}
    POST /api/agents                  {"name", "config", "note"?} -> 201 {"name", "version": 1}
    GET  /api/agents/{name}           {"name", "latest", "versions": [{"version", "note", "created_by",
                                      "created_at"}]}
    POST /api/agents/{name}/versions  {"config", "note"?} -> 201 {"version"}
    PUT  /api/agents/{name}/latest    {"version"} -> {"name", "latest"}

Every `agents:ask` principal lists and reads; the writes need `agents:manage` (403 naming it: the
guard's table, `gateway.guard.operations`, and `require` here again). Code profiles are listed
read-only (`kind: "profile"`); a write naming one is 409 `read_only_agent`. What each call decides
is `gateway.agent_catalog.AgentCatalog`'s; these routes only read the request.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.context import GatewayContext
from gateway.errors import GatewayError
from gateway.http_input import principal_of, read_object
from gateway.identity.scopes import MANAGE, require

__all__ = ["routes"]

CREATE_FIELDS: Final = frozenset({"name", "config", "note"})
PUBLISH_FIELDS: Final = frozenset({"config", "note"})
LATEST_FIELDS: Final = frozenset({"version"})


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The agent routes on `ctx`."""
    api = _AgentsApi(ctx)
    return [
        Route("/api/agents", api.listing, methods=["GET"]),
        Route("/api/agents", api.create, methods=["POST"]),
        Route("/api/agents/{name}", api.show, methods=["GET"]),
        Route("/api/agents/{name}/versions", api.publish, methods=["POST"]),
        Route("/api/agents/{name}/latest", api.set_latest, methods=["PUT"]),
    ]


async def _body(request: Request, fields: frozenset[str]) -> dict[str, Any]:
    """The JSON object of the request, with only `fields` (`read_object`); `config` where it is one."""
    given = await read_object(request, fields)
    if "config" in fields and "config" not in given:
        raise GatewayError.invalid_input("config: required")
    return given


class _AgentsApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._catalog = ctx.catalog

    async def listing(self, request: Request) -> Response:
        principal_of(request)
        details = await self._catalog.listing()
        return JSONResponse({"agents": [d["name"] for d in details], "details": details})

    async def create(self, request: Request) -> Response:
        principal = principal_of(request)
        require(principal, MANAGE)
        body = await _body(request, CREATE_FIELDS)
        if "name" not in body:
            raise GatewayError.invalid_input("name: required")
        version = await self._catalog.create(body["name"], body["config"], body.get("note"), principal.name)
        return JSONResponse({"name": body["name"], "version": version}, status_code=201)

    async def show(self, request: Request) -> Response:
        principal_of(request)
        record = await self._catalog.record(request.path_params["name"])
        return JSONResponse(
            {
                "name": record.name,
                "latest": record.latest,
                "versions": [
                    {
                        "version": v.version,
                        "note": v.note,
                        "created_by": v.created_by,
                        "created_at": datetime.fromtimestamp(v.created_at, UTC).isoformat(),
                    }
                    for v in record.versions
                ],
            }
        )

    async def publish(self, request: Request) -> Response:
        principal = principal_of(request)
        require(principal, MANAGE)
        body = await _body(request, PUBLISH_FIELDS)
        name = request.path_params["name"]
        version = await self._catalog.publish(name, body["config"], body.get("note"), principal.name)
        return JSONResponse({"version": version}, status_code=201)

    async def set_latest(self, request: Request) -> Response:
        principal = principal_of(request)
        require(principal, MANAGE)
        body = await _body(request, LATEST_FIELDS)
        if "version" not in body:
            raise GatewayError.invalid_input("version: required")
        name = request.path_params["name"]
        return JSONResponse({"name": name, "latest": await self._catalog.set_latest(name, body["version"])})
