"""`GatewayMemory`: the caller's memory items of one of the gateway's agents, for every surface.

The HTTP routes (`gateway.memory`) and the MCP tools (`gateway.mcp.server`), two rooms, both call it, so
each decision is made once: the namespace (the agent's `memory.namespace`, default its name, under
the caller's principal: another principal's items are not the caller's to address, so they are 404
`not_found` like missing ones), the fields a put takes, the default limits, the item's shape, and
the store's refusals (a `StoreError` by its code, nothing written; a store that does not answer is
503 `unavailable` with `Retry-After`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from clients.memory import Memory
from contracts.memory import MemoryItem
from gateway.context import GatewayContext, resolve_agent
from gateway.core.store_calls import store_call
from gateway.errors import GatewayError, not_found
from gateway.identity.principal import Principal
from store.items import FilterValue

__all__ = ["PUT_FIELDS", "GatewayMemory", "item_json"]

PUT_FIELDS: Final = frozenset({"text", "value", "ttl_s"})
SEARCH_LIMIT: Final = 5
"""Items a search gives when the caller names no limit."""
LIST_LIMIT: Final = 50
"""Items a page holds when the caller names no limit."""


def item_json(item: MemoryItem) -> dict[str, Any]:
    """An item as the surfaces answer it (absent optional fields left out)."""
    shown = item.model_dump(mode="json", exclude_none=True)
    if item.value is None:
        shown.pop("value", None)
    return shown


class GatewayMemory:
    """The memory operations of the gateway, on one `Memory` client of its store (opened on first use)."""

    def __init__(self, ctx: GatewayContext) -> None:
        """Bind the context; the store opens on the first call."""
        self._ctx = ctx
        self._memory = Memory(ctx.settings.memory_store_url)

    async def _target(self, principal: Principal, agent: str) -> tuple[Memory, str]:
        """The caller's `Memory` and the agent's memory namespace (404 `unknown_agent`)."""
        found = await resolve_agent(self._ctx, agent)
        namespace = (found.config.memory.namespace if found.config.memory else None) or found.name
        return self._memory.of(principal.name), namespace

    async def find(
        self,
        principal: Principal,
        agent: str,
        query: str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        filters: Mapping[str, FilterValue] | None = None,
    ) -> dict[str, Any]:
        """`{"items": [...]}`: a search for `query`, else a page (`next_cursor` while more follow).

        `filters` narrow a search to items whose values have those fields equal to those values.

        Raises:
            GatewayError: 400 `invalid_input` (`filters` without a query, or a refused part).
        """
        memory, namespace = await self._target(principal, agent)
        if query is not None:
            found = await store_call(
                memory.search(
                    namespace, query, limit=SEARCH_LIMIT if limit is None else limit, filters=filters
                )
            )
            return {"items": [item_json(item) for item in found]}
        if filters:
            raise GatewayError.invalid_input("a filter narrows a search: give `q` too")
        page = await store_call(
            memory.list(namespace, limit=LIST_LIMIT if limit is None else limit, cursor=cursor)
        )
        body: dict[str, Any] = {"items": [item_json(item) for item in page.items]}
        if page.next_cursor is not None:
            body["next_cursor"] = page.next_cursor
        return body

    async def show(self, principal: Principal, agent: str, key: str) -> dict[str, Any]:
        """The item (404 `not_found` when there is none the caller may see)."""
        memory, namespace = await self._target(principal, agent)
        item = await store_call(memory.get(namespace, key))
        if item is None:
            raise not_found("memory item")
        return item_json(item)

    async def put(
        self, principal: Principal, agent: str, key: str, fields: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Store `{"text", "value"?, "ttl_s"?}` under the key; the item."""
        memory, namespace = await self._target(principal, agent)
        ttl: Any = fields.get("ttl_s")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise GatewayError.invalid_input("ttl_s must be a number of seconds")
        text: Any = fields.get("text")
        item = await store_call(memory.put(namespace, key, text, value=fields.get("value"), ttl_s=ttl))
        return item_json(item)

    async def delete(self, principal: Principal, agent: str, key: str) -> dict[str, Any]:
        """Forget the item: `{"deleted": key}` (404 `not_found` when there was none)."""
        memory, namespace = await self._target(principal, agent)
        if not await store_call(memory.delete(namespace, key)):
            raise not_found("memory item")
        return {"deleted": key}

    async def close(self) -> None:
        """Close the store."""
        await self._memory.close()
