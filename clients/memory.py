"""`Memory`: the typed client of the long-term store's memory items, one principal's at a time.

    async with Memory() as memory:                      # REACT_STORE_URL, principal `local`
        await memory.put("assistant", "drink", "The user prefers green tea")
        found = await memory.search("assistant", "what does the user drink?")
        alice = memory.of("alice")                       # the same store, alice's items

A namespace here is the agent's memory namespace (`AgentConfig.memory.namespace`, default the
agent's name); the principal comes first in the store (`store.items.Namespace`), so a principal's
`Memory` never reaches another's items. Refusals are `store.StoreError`s: `StoreInputError` by
name (nothing written), `StoreUnavailableError` when the database does not answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from contracts.memory import LOCAL_PRINCIPAL, MemoryItem
from store import MemoryPage, MemoryStore
from store.items import FilterValue
from store.memory_store import backend_for
from store.settings import store_url

__all__ = ["Memory", "OpenedStore"]


class OpenedStore:
    """The store of one client (every principal's `Memory` of it, a `UsageReports`), opened on first use."""

    def __init__(self, url: str | None) -> None:
        """Bind the store's URL (default `REACT_STORE_URL`); nothing connects yet."""
        self.url = url
        self.store: MemoryStore | None = None
        self.lock = asyncio.Lock()

    async def get(self) -> MemoryStore:
        """The store, opened and migrated once (again after a failed open)."""
        async with self.lock:
            if self.store is None:
                opened = MemoryStore(backend_for(self.url or store_url()))
                try:
                    await opened.migrate()
                except BaseException:
                    await opened.close()
                    raise
                self.store = opened
            return self.store

    async def close(self) -> None:
        """Close the store, if open."""
        if self.store is not None:
            store, self.store = self.store, None
            await store.close()


class Memory:
    """One principal's memory items on the store `url` names (default `REACT_STORE_URL`)."""

    def __init__(self, url: str | None = None, principal: str = LOCAL_PRINCIPAL) -> None:
        """Bind the store and the principal; nothing connects until the first call."""
        self._opened = OpenedStore(url)
        self.principal = principal

    def of(self, principal: str) -> Memory:
        """The same store, `principal`'s items."""
        other = Memory.__new__(Memory)
        other._opened = self._opened
        other.principal = principal
        return other

    def _ns(self, namespace: str, path: tuple[str, ...] = ()) -> tuple[str, ...]:
        return (self.principal, namespace, *path)

    async def put(
        self,
        namespace: str,
        key: str,
        text: str,
        *,
        value: Any = None,
        ttl_s: float | None = None,
        path: tuple[str, ...] = (),
    ) -> MemoryItem:
        """Remember `text` (and a JSON `value`) under `key`, for `ttl_s` seconds if given."""
        store = await self._opened.get()
        return await store.put(self._ns(namespace, path), key, text, value=value, ttl_s=ttl_s)

    async def get(self, namespace: str, key: str, *, path: tuple[str, ...] = ()) -> MemoryItem | None:
        """The item, or None (missing, expired, or never this principal's)."""
        return await (await self._opened.get()).get(self._ns(namespace, path), key)

    async def delete(self, namespace: str, key: str, *, path: tuple[str, ...] = ()) -> bool:
        """Forget the item; whether it was there."""
        return await (await self._opened.get()).delete(self._ns(namespace, path), key)

    async def delete_written(self, write_ids: Iterable[str]) -> int:
        """Forget this principal's items (any namespace) last written by one of `write_ids`; how many."""
        return await (await self._opened.get()).delete_written((self.principal,), write_ids)

    async def delete_all(self) -> int:
        """Forget every item of this principal, in every namespace; how many."""
        return await (await self._opened.get()).delete_under((self.principal,))

    async def list(self, namespace: str, *, limit: int = 50, cursor: str | None = None) -> MemoryPage:
        """A page of the namespace's items (its paths' too), by key; `next_cursor` continues it."""
        return await (await self._opened.get()).list(self._ns(namespace), limit=limit, cursor=cursor)

    async def search(
        self,
        namespace: str,
        query: str,
        *,
        limit: int = 5,
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[MemoryItem]:
        """The namespace's `limit` items best matching `query`, best first.

        `filters`: only items whose value has these fields equal to these values (`{"kind": "drink"}`).
        """
        found = await self._opened.get()
        return await found.search(self._ns(namespace), query, limit=limit, filters=filters)

    async def close(self) -> None:
        """Close the store (every principal's `Memory` of this client)."""
        await self._opened.close()

    async def __aenter__(self) -> Memory:
        """This client; the store opens on the first call."""
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Close the store."""
        await self.close()
