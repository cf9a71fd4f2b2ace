"""The store on PostgreSQL (`psycopg` 3): full text by a generated `tsvector` and a GIN index.

One connection per store, its statements one at a time (a lock); a connection that broke is
opened again on the next call. Migrations take a transaction-scoped advisory lock, so several
workers and gateways starting together apply each version once. Ids are compared in the "C"
collation, so the namespace-prefix range (`store.backend.prefix_bounds`) is byte order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import psycopg

from store import agent_versions
from store.backend import Migration, Row, Sql, prefix_bounds
from store.evals_schema import POSTGRES_EVALS
from store.files_schema import POSTGRES_FILES_MIGRATION
from store.usage import POSTGRES_MIGRATION as USAGE_MIGRATION

_T = TypeVar("_T")

MIGRATIONS: Final = (
    Migration(
        1,
        (
            """CREATE TABLE memory_items (
                ns TEXT COLLATE "C" NOT NULL,
                key TEXT COLLATE "C" NOT NULL,
                text TEXT NOT NULL,
                value TEXT,
                vector BYTEA,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL,
                expires_at DOUBLE PRECISION,
                write_id TEXT,
                tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
                PRIMARY KEY (ns, key)
            )""",
            "CREATE INDEX memory_items_tsv ON memory_items USING GIN (tsv)",
            "CREATE INDEX memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL",
            "CREATE INDEX memory_items_recent ON memory_items (ns, updated_at)",
        ),
    ),
    POSTGRES_FILES_MIGRATION,
    Migration(3, agent_versions.SCHEMA),
    USAGE_MIGRATION,
    POSTGRES_EVALS,
)
"""The schema's versions, oldest first; a version is never changed once released, only added to."""

_MIGRATION_LOCK: Final = 0x52454143  # "REAC": the advisory lock of schema migrations
_COLUMNS = "ns, key, text, value, vector, created_at, updated_at, expires_at, write_id"
_UNDER = "(ns = %s OR (ns >= %s AND ns < %s))"
_LIVE = "(expires_at IS NULL OR expires_at > %s)"


def _row(values: Any) -> Row:
    ns, key, text, value, vector, created, updated, expires, write_id = values
    return Row(
        ns, key, text, value, None if vector is None else bytes(vector), created, updated, expires, write_id
    )


class PostgresBackend:
    """The store's SQL on one PostgreSQL database."""

    def __init__(self, url: str, connect_timeout_s: int = 5) -> None:
        """A backend on the database `url` names; nothing connects yet."""
        self._url = url
        self._timeout = connect_timeout_s
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=self._timeout
            )
        return self._conn

    async def _fetch(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._lock:
            conn = await self._connection()
            cursor = await conn.execute(sql.encode(), parameters)  # pyright: ignore[reportArgumentType]
            return list(await cursor.fetchall()) if cursor.description else []

    async def migrate(self) -> list[int]:
        """Apply the versions of `MIGRATIONS` not applied yet, under the migrations' advisory lock."""
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS store_schema "
                    "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
                )
                cursor = await conn.execute("SELECT version FROM store_schema")
                applied = {int(version) for (version,) in await cursor.fetchall()}
                for migration in MIGRATIONS:
                    if migration.version in applied:
                        continue
                    for statement in migration.statements:
                        await conn.execute(statement.encode())  # pyright: ignore[reportArgumentType]
                    await conn.execute(
                        "INSERT INTO store_schema (version, applied_at) VALUES (%s, %s)",
                        (migration.version, time.time()),
                    )
                    applied.add(migration.version)
            return sorted(applied)

    async def put(self, row: Row) -> Row:
        """Insert or replace the item (its `created_at` kept) in one statement; a repeat: no-op."""
        rows = await self._fetch(
            f"INSERT INTO memory_items ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (ns, key) DO UPDATE SET text = EXCLUDED.text, value = EXCLUDED.value, "
            "vector = EXCLUDED.vector, updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at, "
            "write_id = EXCLUDED.write_id "
            "WHERE memory_items.write_id IS DISTINCT FROM EXCLUDED.write_id OR EXCLUDED.write_id IS NULL "
            f"RETURNING {_COLUMNS}",
            (row.ns, row.key, row.text, row.value, row.vector, row.created_at,
             row.updated_at, row.expires_at, row.write_id),
        )  # fmt: skip
        if rows:
            return _row(rows[0])
        found = await self._fetch(
            f"SELECT {_COLUMNS} FROM memory_items WHERE ns = %s AND key = %s", (row.ns, row.key)
        )
        return _row(found[0])

    async def get(self, ns: str, key: str, now: float) -> Row | None:
        """The item, unless missing or expired."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM memory_items WHERE ns = %s AND key = %s AND {_LIVE}", (ns, key, now)
        )
        return _row(rows[0]) if rows else None

    async def delete(self, ns: str, key: str) -> bool:
        """Remove the item; whether it was there."""
        rows = await self._fetch("DELETE FROM memory_items WHERE ns = %s AND key = %s RETURNING 1", (ns, key))
        return bool(rows)

    async def delete_written(self, prefix: str, write_ids: list[str]) -> int:
        """Remove the items under `prefix` last written by one of `write_ids`; how many."""
        if not write_ids:
            return 0
        rows = await self._fetch(
            f"DELETE FROM memory_items WHERE {_UNDER} AND write_id = ANY(%s) RETURNING 1",
            (*prefix_bounds(prefix), list(write_ids)),
        )
        return len(rows)

    async def delete_under(self, prefix: str) -> int:
        """Remove every item under `prefix` (expired or not); how many."""
        rows = await self._fetch(
            f"DELETE FROM memory_items WHERE {_UNDER} RETURNING 1", prefix_bounds(prefix)
        )
        return len(rows)

    async def list(self, prefix: str, after: str | None, limit: int, now: float) -> list[Row]:
        """Items under `prefix` in (ns, key) order, after the cursor."""
        ns_after, _, key_after = (after or "").partition("\x1f")
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM memory_items WHERE {_UNDER} AND {_LIVE} "
            "AND (ns, key) > (%s, %s) ORDER BY ns, key LIMIT %s",
            (*prefix_bounds(prefix), now, ns_after, key_after, limit),
        )
        return [_row(values) for values in rows]

    async def text_matches(
        self, prefix: str, words: list[str], limit: int, now: float
    ) -> list[tuple[Row, float]]:
        """`tsvector` matches of any word, ranked by `ts_rank`."""
        if not words:
            return []
        query = " | ".join(words)
        rows = await self._fetch(
            f"SELECT {_COLUMNS}, ts_rank(tsv, q) FROM memory_items, to_tsquery('english', %s) q "
            f"WHERE tsv @@ q AND {_UNDER} AND {_LIVE} ORDER BY ts_rank(tsv, q) DESC LIMIT %s",
            (query, *prefix_bounds(prefix), now, limit),
        )
        return [(_row(values[:-1]), float(values[-1])) for values in rows]

    async def recent(self, prefix: str, limit: int, now: float) -> list[Row]:
        """The most recently updated items under `prefix`.

        The namespace itself and the namespaces under it are read apart, each its newest `limit`
        (the exact one walks the `(ns, updated_at)` index backwards), then merged.
        """
        exact, low, high = prefix_bounds(prefix)
        rows = await self._fetch(
            f"(SELECT {_COLUMNS} FROM memory_items WHERE ns = %s AND {_LIVE} "
            "ORDER BY updated_at DESC LIMIT %s) UNION ALL "
            f"(SELECT {_COLUMNS} FROM memory_items WHERE ns >= %s AND ns < %s AND {_LIVE} "
            "ORDER BY updated_at DESC LIMIT %s) ORDER BY updated_at DESC LIMIT %s",
            (exact, now, limit, low, high, now, limit, limit),
        )
        return [_row(values) for values in rows]

    async def sweep(self, now: float) -> int:
        """Delete expired items."""
        rows = await self._fetch(
            "DELETE FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= %s RETURNING 1", (now,)
        )
        return len(rows)

    async def count(self, prefix: str) -> int:
        """Items stored under `prefix`."""
        rows = await self._fetch(f"SELECT count(*) FROM memory_items WHERE {_UNDER}", prefix_bounds(prefix))
        return int(rows[0][0])

    async def rows(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one statement (`?` placeholders) of another table's code (`store.files`); its rows."""
        return await self._fetch(sql.replace("?", "%s"), parameters)

    async def transaction(self, work: Callable[[Sql], Awaitable[_T]]) -> _T:
        """Run `work` in one transaction of the connection (its row locks keep a concurrent writer out)."""
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction():
                return await work(_PostgresSql(conn))

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()


class _PostgresSql:
    """Statements on the connection of a transaction in progress (`?` marks become `%s`)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn

    async def fetch(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cursor = await self._conn.execute(sql.replace("?", "%s").encode(), parameters)  # pyright: ignore[reportArgumentType]
        return list(await cursor.fetchall()) if cursor.description else []
