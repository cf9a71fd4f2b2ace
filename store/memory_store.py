"""`MemoryStore`: the one async interface over both databases: rules, embeddings, ranking, refusals.

Search ranks the union of two candidate sets: the backend's full-text matches of any query word
(`TEXT_CANDIDATES`) and the namespace's most recently updated items (`VECTOR_SCAN`, compared by
vector in Python: portable, no pgvector). An item's score is `SEMANTIC_WEIGHT` times its cosine
similarity to the query plus the rest times its full-text rank scaled to the best match's.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import psycopg
from pydantic_core import from_json

from contracts.memory import MemoryItem
from store import embedding
from store.backend import Backend, Row, query_words
from store.errors import StoreInputError, guarded
from store.items import (
    FilterValue,
    Namespace,
    check_filters,
    check_key,
    check_limit,
    check_page_size,
    check_query,
    check_text,
    check_ttl,
    namespace_id,
    value_json,
    value_matches,
)
from store.postgres_backend import PostgresBackend
from store.settings import is_postgres, sqlite_path, store_url
from store.sqlite_backend import SqliteBackend
from store.usage import UsageStore

TEXT_CANDIDATES: Final = 50
VECTOR_SCAN: Final = 500
SEMANTIC_WEIGHT: Final = 0.6
_T = TypeVar("_T")


@dataclass(frozen=True)
class MemoryPage:
    """One page of a list: its items and the cursor of the next page (None at the end)."""

    items: list[MemoryItem]
    next_cursor: str | None


def _when(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def item_of(row: Row, score: float | None = None) -> MemoryItem:
    """The item a row holds, as every surface shows it."""
    created = _when(row.created_at)
    updated = _when(row.updated_at)
    assert created is not None and updated is not None
    return MemoryItem(
        key=row.key,
        text=row.text,
        value=None if row.value is None else from_json(row.value),
        created_at=created,
        updated_at=updated,
        expires_at=_when(row.expires_at),
        score=score,
    )


class MemoryStore:
    """Memory items in namespaces `(principal, agent namespace, path...)`, on one `Backend`.

    Every method checks its input first (`StoreInputError`, nothing written) and turns a database
    that does not answer into `StoreUnavailableError`.
    """

    def __init__(self, backend: Backend, clock: Callable[[], float] = time.time) -> None:
        """A store on `backend`; call `migrate` (or use `open_store`) before anything else."""
        self._backend = backend
        self._clock = clock
        self.usage = UsageStore(backend, self._guard)
        """The requests' usage rows, in the same database (`store.usage`)."""

    async def migrate(self) -> list[int]:
        """Apply the schema versions not applied yet; the versions applied."""
        return await self._guard(self._backend.migrate())

    async def put(
        self,
        namespace: Namespace,
        key: str,
        text: str,
        *,
        value: Any = None,
        ttl_s: float | None = None,
        write_id: str | None = None,
    ) -> MemoryItem:
        """Store `text` (and `value`) under `key`; its last `write_id` again changes nothing.

        Raises:
            StoreInputError: a part breaks its rule or bound.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(namespace)
        check_key(key)
        check_text(text)
        data = value_json(value)
        ttl = check_ttl(ttl_s)
        vector = (await embedding.embed([text]))[0]
        now = self._clock()
        row = Row(ns, key, text, data, vector, now, now, None if ttl is None else now + ttl, write_id)
        return item_of(await self._guard(self._backend.put(row)))

    async def get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The item, or None (missing or expired).

        Raises:
            StoreInputError: a part breaks its rule.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(namespace)
        check_key(key)
        row = await self._guard(self._backend.get(ns, key, self._clock()))
        return None if row is None else item_of(row)

    async def delete(self, namespace: Namespace, key: str) -> bool:
        """Forget the item; whether it was there.

        Raises:
            StoreInputError: a part breaks its rule.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(namespace)
        check_key(key)
        return await self._guard(self._backend.delete(ns, key))

    async def delete_written(self, prefix: Namespace, write_ids: Iterable[str]) -> int:
        """Forget the items under `prefix` whose last write carries one of `write_ids`; how many.

        A write id is the idempotency key of the tool call that wrote the item (a later write
        by any other call replaces it: the item is then that call's).

        Raises:
            StoreInputError: a part breaks its rule.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(prefix, prefix=True)
        return await self._guard(self._backend.delete_written(ns, sorted(set(write_ids))))

    async def delete_under(self, prefix: Namespace) -> int:
        """Forget every item under the namespace `prefix` (all of a principal's: `(principal,)`); how many.

        Raises:
            StoreInputError: a part breaks its rule.
            StoreUnavailableError: the database did not answer.
        """
        return await self._guard(self._backend.delete_under(namespace_id(prefix, prefix=True)))

    async def list(self, prefix: Namespace, *, limit: int = 50, cursor: str | None = None) -> MemoryPage:
        """A page of the items under the namespace `prefix`, by namespace and key.

        Raises:
            StoreInputError: a part breaks its rule, a bad page size or cursor.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(prefix, prefix=True)
        check_page_size(limit)
        if cursor is not None and (not isinstance(cursor, str) or len(cursor) > 512):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreInputError("cursor must be one a previous page returned")
        rows = await self._guard(self._backend.list(ns, cursor, limit + 1, self._clock()))
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = f"{rows[-1].ns}\x1f{rows[-1].key}" if more else None
        return MemoryPage([item_of(row) for row in rows], next_cursor)

    async def search(
        self,
        prefix: Namespace,
        query: str,
        *,
        limit: int = 5,
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[MemoryItem]:
        """The `limit` items under `prefix` best matching `query`, best first (`score` set).

        `filters`: only items whose JSON value is an object with each of these fields equal to
        its value (`store.items.value_matches`), among the candidates the search ranks (the text
        matches and the namespace's most recently updated items).

        Raises:
            StoreInputError: a part breaks its rule, a bad query, limit or filter.
            StoreUnavailableError: the database did not answer.
        """
        ns = namespace_id(prefix, prefix=True)
        check_query(query)
        check_limit(limit)
        wanted = check_filters(filters or {})
        now = self._clock()
        matches = await self._guard(self._backend.text_matches(ns, query_words(query), TEXT_CANDIDATES, now))
        recent = await self._guard(self._backend.recent(ns, VECTOR_SCAN, now))
        best_rank = max((rank for _, rank in matches), default=0.0)
        text_scores = {
            (row.ns, row.key): (rank / best_rank if best_rank > 0 else 0.0) for row, rank in matches
        }
        candidates = {(row.ns, row.key): row for row, _ in matches}
        for row in recent:
            candidates.setdefault((row.ns, row.key), row)
        rows = [
            row
            for row in candidates.values()
            if value_matches(None if row.value is None else from_json(row.value), wanted)
        ]
        if not rows:
            return []
        query_vector = (await embedding.embed([query]))[0]
        similar = embedding.similarities(query_vector, [row.vector for row in rows])
        scored = [
            (
                SEMANTIC_WEIGHT * max(sim, 0.0)
                + (1 - SEMANTIC_WEIGHT) * text_scores.get((row.ns, row.key), 0.0),
                row,
            )
            for row, sim in zip(rows, similar, strict=True)
        ]
        scored.sort(key=lambda pair: (-pair[0], pair[1].key))
        return [item_of(row, round(score, 4)) for score, row in scored[:limit]]

    async def sweep(self) -> int:
        """Delete every expired item; how many.

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        return await self._guard(self._backend.sweep(self._clock()))

    async def count(self, prefix: Namespace) -> int:
        """Items stored under `prefix` (for erasure checks and measurements).

        Raises:
            StoreInputError: a part breaks its rule.
            StoreUnavailableError: the database did not answer.
        """
        return await self._guard(self._backend.count(namespace_id(prefix, prefix=True)))

    async def close(self) -> None:
        """Close the database connection."""
        try:
            await self._backend.close()
        except (OSError, sqlite3.Error, psycopg.Error):
            pass

    async def guarded(self, operation: Awaitable[_T]) -> _T:
        """`operation`'s result, a database that does not answer as `StoreUnavailableError`."""
        return await self._guard(operation)

    async def _guard(self, operation: Awaitable[_T]) -> _T:
        return await guarded(operation)


def backend_for(url: str) -> Backend:
    """The backend `url` names (`sqlite:///<path>` or `postgresql://...`).

    Raises:
        StoreInputError: an URL of another scheme.
    """
    path = sqlite_path(url)
    if path is not None:
        return SqliteBackend(path)
    if is_postgres(url):
        return PostgresBackend(url)
    raise StoreInputError("REACT_STORE_URL must start with sqlite:/// or postgresql://")


@asynccontextmanager
async def open_store(url: str | None = None) -> AsyncIterator[MemoryStore]:
    """The store `url` names (default `REACT_STORE_URL`), migrated, closed on exit.

    Raises:
        StoreUnavailableError: the database did not answer.
    """
    store = MemoryStore(backend_for(url or store_url()))
    try:
        await store.migrate()
        yield store
    finally:
        await store.close()
