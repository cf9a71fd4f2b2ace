"""`/api/memory`: the caller's memory items of one of the gateway's agents, on the typed client's `Memory`.

    GET    /api/memory/{agent}?q=&limit=&cursor=   {"items": [...]}: a search with `q`, else a page
                                                   (and `next_cursor` while more follow)
    GET    /api/memory/{agent}/items/{key}         the item
    PUT    /api/memory/{agent}/items/{key}         {"text", "value"?, "ttl_s"?} -> the item
    DELETE /api/memory/{agent}/items/{key}         {"deleted": key}

An item is `{"key", "text", "value"?, "created_at", "updated_at", "expires_at"?}` (and `score` in a
search). The namespace is the agent's memory namespace (`memory.namespace`, default the agent's
name) under the caller's principal: another principal's items are not the caller's to address, so
they are 404 `not_found` like missing ones. Bad input is refused by name (nothing written); a
store that does not answer is 503 `unavailable` with `Retry-After`.
"""

from __future__ import annotations

from typing import Any, Final, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.memory import Memory
from contracts.memory import MemoryItem
from gateway.context import GatewayContext, agent_config
from gateway.core.store_calls import store_call
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_json

__all__ = ["routes"]

PUT_FIELDS: Final = frozenset({"text", "value", "ttl_s"})


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The memory routes."""
    api = MemoryApi(ctx)
    return [
        Route("/api/memory/{agent}", api.find, methods=["GET"]),
        Route("/api/memory/{agent}/items/{key}", api.show, methods=["GET"]),
        Route("/api/memory/{agent}/items/{key}", api.put, methods=["PUT"]),
        Route("/api/memory/{agent}/items/{key}", api.delete, methods=["DELETE"]),
    ]


def item_json(item: MemoryItem) -> dict[str, Any]:
    """An item as the routes answer it (absent optional fields left out)."""
    shown = item.model_dump(mode="json", exclude_none=True)
    if item.value is None:
        shown.pop("value", None)
    return shown


def _int(value: str | None, name: str, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise GatewayError.invalid_input(f"{name} must be an integer") from None


class MemoryApi:
    """The memory routes, on one `Memory` client of the gateway's store."""

    def __init__(self, ctx: GatewayContext) -> None:
        """Bind the context; the store opens on the first request."""
        self._ctx = ctx
        self._memory = Memory(ctx.settings.memory_store_url)

    def _target(self, request: Request) -> tuple[Memory, str]:
        """The caller's `Memory` and the agent's memory namespace (404 `unknown_agent`)."""
        agent = request.path_params["agent"]
        config = agent_config(self._ctx, agent)
        namespace = (config.memory.namespace if config.memory else None) or agent
        return self._memory.of(principal_of(request).name), namespace

    async def find(self, request: Request) -> Response:
        """A search (`q`) or a page of the caller's items."""
        memory, namespace = self._target(request)
        query = request.query_params.get("q")
        if query is not None:
            limit = _int(request.query_params.get("limit"), "limit", 5)
            found = await store_call(memory.search(namespace, query, limit=limit))
            return JSONResponse({"items": [item_json(item) for item in found]})
        limit = _int(request.query_params.get("limit"), "limit", 50)
        cursor = request.query_params.get("cursor")
        page = await store_call(memory.list(namespace, limit=limit, cursor=cursor))
        body: dict[str, Any] = {"items": [item_json(item) for item in page.items]}
        if page.next_cursor is not None:
            body["next_cursor"] = page.next_cursor
        return JSONResponse(body)

    async def show(self, request: Request) -> Response:
        """One item, or 404."""
        memory, namespace = self._target(request)
        item = await store_call(memory.get(namespace, request.path_params["key"]))
        if item is None:
            raise not_found("memory item")
        return JSONResponse(item_json(item))

    async def put(self, request: Request) -> Response:
        """Store `{"text", "value"?, "ttl_s"?}` under the key."""
        memory, namespace = self._target(request)
        body = await read_json(request)
        if not isinstance(body, dict):
            raise GatewayError.invalid_input("the body must be a JSON object")
        fields = cast(dict[str, Any], body)
        unknown = sorted(set(fields) - PUT_FIELDS)
        if unknown:
            raise GatewayError.invalid_input(f"unknown fields: {', '.join(unknown)}")
        ttl: Any = fields.get("ttl_s")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise GatewayError.invalid_input("ttl_s must be a number of seconds")
        text: Any = fields.get("text")
        key = request.path_params["key"]
        item = await store_call(memory.put(namespace, key, text, value=fields.get("value"), ttl_s=ttl))
        return JSONResponse(item_json(item))

    async def delete(self, request: Request) -> Response:
        """Forget the item (404 when there was none)."""
        memory, namespace = self._target(request)
        key = request.path_params["key"]
        if not await store_call(memory.delete(namespace, key)):
            raise not_found("memory item")
        return JSONResponse({"deleted": key})
