"""`/api/memory`: the caller's memory items of one of the gateway's agents (`GatewayMemory`).

    GET    /api/memory/{agent}?q=&limit=&cursor=&filter=
                                                   {"items": [...]}: a search with `q` (`filter`: a
                                                   JSON object of value fields and the values they
                                                   must equal), else a page (and `next_cursor` while
                                                   more follow)
    GET    /api/memory/{agent}/items/{key}         the item
    PUT    /api/memory/{agent}/items/{key}         {"text", "value"?, "ttl_s"?} -> the item
    DELETE /api/memory/{agent}/items/{key}         {"deleted": key}

An item is `{"key", "text", "value"?, "created_at", "updated_at", "expires_at"?}` (and `score` in a
search). What each call decides (the namespace, the fields, the refusals) is `GatewayMemory`'s,
which the MCP tools call too; these routes only read the request.
"""

from __future__ import annotations

import json
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.core.memory import PUT_FIELDS, GatewayMemory
from gateway.errors import GatewayError
from gateway.http_input import principal_of, read_object

__all__ = ["routes"]


def routes(memory: GatewayMemory) -> list[BaseRoute]:
    """The memory routes over `memory`."""
    api = MemoryApi(memory)
    return [
        Route("/api/memory/{agent}", api.find, methods=["GET"]),
        Route("/api/memory/{agent}/items/{key}", api.show, methods=["GET"]),
        Route("/api/memory/{agent}/items/{key}", api.put, methods=["PUT"]),
        Route("/api/memory/{agent}/items/{key}", api.delete, methods=["DELETE"]),
    ]


def _int(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise GatewayError.invalid_input(f"{name} must be an integer") from None


def _filters(value: str | None) -> dict[str, Any] | None:
    """The `filter` parameter: a JSON object (its fields are checked by the store)."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        raise GatewayError.invalid_input("filter must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise GatewayError.invalid_input("filter must be a JSON object")
    return cast(dict[str, Any], parsed)


class MemoryApi:
    """The memory routes: each reads its request and calls `GatewayMemory`."""

    def __init__(self, memory: GatewayMemory) -> None:
        """Bind the gateway's memory."""
        self._memory = memory

    async def find(self, request: Request) -> Response:
        """A search (`q`) or a page of the caller's items."""
        params = request.query_params
        found = await self._memory.find(
            principal_of(request),
            request.path_params["agent"],
            params.get("q"),
            limit=_int(params.get("limit"), "limit"),
            cursor=params.get("cursor"),
            filters=_filters(params.get("filter")),
        )
        return JSONResponse(found)

    async def show(self, request: Request) -> Response:
        """One item, or 404."""
        path = request.path_params
        return JSONResponse(await self._memory.show(principal_of(request), path["agent"], path["key"]))

    async def put(self, request: Request) -> Response:
        """Store `{"text", "value"?, "ttl_s"?}` under the key."""
        body = await read_object(request, PUT_FIELDS)
        path = request.path_params
        item = await self._memory.put(principal_of(request), path["agent"], path["key"], body)
        return JSONResponse(item)

    async def delete(self, request: Request) -> Response:
        """Forget the item (404 when there was none)."""
        path = request.path_params
        return JSONResponse(await self._memory.delete(principal_of(request), path["agent"], path["key"]))
