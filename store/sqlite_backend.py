"""The store on SQLite (`aiosqlite`): one file, WAL, full text by FTS5 (porter stemming).

One connection per store, its transactions one at a time (a lock): SQLite has one writer anyway.
The FTS5 table `memory_fts` holds each item's text under the item's rowid, kept in the same
transaction as the item.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import aiosqlite

from store import agent_versions
from store.backend import Migration, Row, Sql, prefix_bounds
from store.evals_schema import SQLITE_EVALS
from store.files_schema import SQLITE_FILES_MIGRATION
from store.usage import SQLITE_MIGRATION as USAGE_MIGRATION

_T = TypeVar("_T")

MIGRATIONS: Final = (
    Migration(
        1,
        (
            """CREATE TABLE memory_items (
                id INTEGER PRIMARY KEY,
                ns TEXT NOT NULL,
                key TEXT NOT NULL,
                text TEXT NOT NULL,
                value TEXT,
                vector BLOB,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                expires_at REAL,
                write_id TEXT,
                UNIQUE (ns, key)
            )""",
            "CREATE INDEX memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL",
            "CREATE INDEX memory_items_recent ON memory_items (ns, updated_at)",
            "CREATE VIRTUAL TABLE memory_fts USING fts5(text, tokenize = 'porter unicode61')",
        ),
    ),
    SQLITE_FILES_MIGRATION,
    Migration(3, agent_versions.SCHEMA),
    USAGE_MIGRATION,
    SQLITE_EVALS,
)
"""The schema's versions, oldest first; a version is never changed once released, only added to."""

_COLUMNS = "ns, key, text, value, vector, created_at, updated_at, expires_at, write_id"
_M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in _COLUMNS.split(","))
_UNDER = "(m.ns = ? OR (m.ns >= ? AND m.ns < ?))"
_LIVE = "(m.expires_at IS NULL OR m.expires_at > ?)"


def _row(values: Any) -> Row:
    ns, key, text, value, vector, created, updated, expires, write_id = values
    return Row(ns, key, text, value, vector, created, updated, expires, write_id)


class SqliteBackend:
    """The store's SQL on one SQLite file."""

    def __init__(self, path: str) -> None:
        """A backend on the file `path` (`:memory:` for a throwaway one); nothing opens yet."""
        self._path = path
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    async def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            if self._path != ":memory:":
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            pending = aiosqlite.connect(self._path, isolation_level=None)
            # aiosqlite's worker thread is not a daemon: a store its owner never closed (a worker or
            # a gateway stopped by a signal) would keep the process from exiting. Every statement
            # commits on its own (autocommit, WAL), so a thread cut at exit loses no committed write.
            pending._thread.daemon = True  # pyright: ignore[reportPrivateUsage]
            db = await pending
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA busy_timeout = 5000")
            self._db = db
        return self._db

    async def migrate(self) -> list[int]:
        """Apply the versions of `MIGRATIONS` not applied yet, each in its own transaction."""
        async with self._lock:
            db = await self._conn()
            await db.execute(
                "CREATE TABLE IF NOT EXISTS store_schema "
                "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            for migration in MIGRATIONS:
                await db.execute("BEGIN IMMEDIATE")
                try:
                    cursor = await db.execute(
                        "SELECT 1 FROM store_schema WHERE version = ?", (migration.version,)
                    )
                    if await cursor.fetchone() is None:
                        for statement in migration.statements:
                            await db.execute(statement)
                        await db.execute(
                            "INSERT INTO store_schema (version, applied_at) VALUES (?, ?)",
                            (migration.version, time.time()),
                        )
                    await db.execute("COMMIT")
                except BaseException:
                    await db.execute("ROLLBACK")
                    raise
            cursor = await db.execute("SELECT version FROM store_schema ORDER BY version")
            return [int(version) for (version,) in await cursor.fetchall()]

    async def put(self, row: Row) -> Row:
        """Insert or replace the item and its text's index entry, in one transaction."""
        async with self._lock:
            db = await self._conn()
            await db.execute("BEGIN IMMEDIATE")
            try:
                cursor = await db.execute(
                    f"SELECT id, {_COLUMNS} FROM memory_items WHERE ns = ? AND key = ?", (row.ns, row.key)
                )
                found = await cursor.fetchone()
                if found is not None and row.write_id is not None and found[-1] == row.write_id:
                    await db.execute("COMMIT")
                    return _row(found[1:])
                stored = row
                if found is None:
                    cursor = await db.execute(
                        f"INSERT INTO memory_items ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (row.ns, row.key, row.text, row.value, row.vector, row.created_at,
                         row.updated_at, row.expires_at, row.write_id),
                    )  # fmt: skip
                    rowid = cursor.lastrowid
                else:
                    rowid = found[0]
                    stored = Row(**{**row.__dict__, "created_at": found[6]})
                    await db.execute(
                        "UPDATE memory_items SET text = ?, value = ?, vector = ?, updated_at = ?, "
                        "expires_at = ?, write_id = ? WHERE id = ?",
                        (
                            row.text,
                            row.value,
                            row.vector,
                            row.updated_at,
                            row.expires_at,
                            row.write_id,
                            rowid,
                        ),
                    )
                    await db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
                await db.execute("INSERT INTO memory_fts (rowid, text) VALUES (?, ?)", (rowid, row.text))
                await db.execute("COMMIT")
                return stored
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def get(self, ns: str, key: str, now: float) -> Row | None:
        """The item, unless missing or expired."""
        rows = await self._select(
            f"SELECT {_M_COLUMNS} FROM memory_items m WHERE m.ns = ? AND m.key = ? AND {_LIVE}",
            (ns, key, now),
        )
        return rows[0] if rows else None

    async def delete(self, ns: str, key: str) -> bool:
        """Remove the item and its index entry; whether it was there."""
        async with self._lock:
            db = await self._conn()
            await db.execute("BEGIN IMMEDIATE")
            try:
                cursor = await db.execute("SELECT id FROM memory_items WHERE ns = ? AND key = ?", (ns, key))
                found = await cursor.fetchone()
                if found is not None:
                    await db.execute("DELETE FROM memory_items WHERE id = ?", (found[0],))
                    await db.execute("DELETE FROM memory_fts WHERE rowid = ?", (found[0],))
                await db.execute("COMMIT")
                return found is not None
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def list(self, prefix: str, after: str | None, limit: int, now: float) -> list[Row]:
        """Items under `prefix` in (ns, key) order, after the cursor."""
        ns_after, _, key_after = (after or "").partition("\x1f")
        return await self._select(
            f"SELECT {_M_COLUMNS} FROM memory_items m WHERE {_UNDER} AND {_LIVE} "
            "AND (m.ns > ? OR (m.ns = ? AND m.key > ?)) ORDER BY m.ns, m.key LIMIT ?",
            (*prefix_bounds(prefix), now, ns_after, ns_after, key_after, limit),
        )

    async def text_matches(
        self, prefix: str, words: list[str], limit: int, now: float
    ) -> list[tuple[Row, float]]:
        """FTS5 matches of any word, ranked by bm25 (negated: higher is better)."""
        if not words:
            return []
        match = " OR ".join(f'"{word}"' for word in words)
        async with self._lock:
            db = await self._conn()
            cursor = await db.execute(
                f"SELECT {_M_COLUMNS}, -bm25(memory_fts) FROM memory_fts "
                f"JOIN memory_items m ON m.id = memory_fts.rowid "
                f"WHERE memory_fts MATCH ? AND {_UNDER} AND {_LIVE} ORDER BY bm25(memory_fts) LIMIT ?",
                (match, *prefix_bounds(prefix), now, limit),
            )
            return [(_row(values[:-1]), float(values[-1])) for values in await cursor.fetchall()]

    async def recent(self, prefix: str, limit: int, now: float) -> list[Row]:
        """The most recently updated items under `prefix`.

        The namespace itself and the namespaces under it are read apart, each its newest `limit`
        (the exact one walks the `(ns, updated_at)` index backwards: an `OR` of the two would
        read and sort every item of the namespace), then merged.
        """
        exact, low, high = prefix_bounds(prefix)
        return await self._select(
            f"SELECT * FROM (SELECT {_M_COLUMNS} FROM memory_items m WHERE m.ns = ? AND {_LIVE} "
            "ORDER BY m.updated_at DESC LIMIT ?) UNION ALL "
            f"SELECT * FROM (SELECT {_M_COLUMNS} FROM memory_items m WHERE m.ns >= ? AND m.ns < ? "
            f"AND {_LIVE} ORDER BY m.updated_at DESC LIMIT ?) ORDER BY updated_at DESC LIMIT ?",
            (exact, now, limit, low, high, now, limit, limit),
        )

    async def delete_written(self, prefix: str, write_ids: list[str]) -> int:
        """Remove the items under `prefix` last written by one of `write_ids`, and their index entries."""
        if not write_ids:
            return 0
        marks = ", ".join("?" for _ in write_ids)
        chosen = f"SELECT m.id FROM memory_items m WHERE {_UNDER} AND m.write_id IN ({marks})"
        return await self._delete_chosen(chosen, (*prefix_bounds(prefix), *write_ids))

    async def delete_under(self, prefix: str) -> int:
        """Remove every item under `prefix` (expired or not), and their index entries."""
        chosen = f"SELECT m.id FROM memory_items m WHERE {_UNDER}"
        return await self._delete_chosen(chosen, prefix_bounds(prefix))

    async def _delete_chosen(self, chosen: str, parameters: tuple[str, ...]) -> int:
        """Remove the items the query `chosen` selects (by id) and their index entries, in one transaction."""
        async with self._lock:
            db = await self._conn()
            await db.execute("BEGIN IMMEDIATE")
            try:
                await db.execute(f"DELETE FROM memory_fts WHERE rowid IN ({chosen})", parameters)
                cursor = await db.execute(f"DELETE FROM memory_items WHERE id IN ({chosen})", parameters)
                await db.execute("COMMIT")
                return cursor.rowcount
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def sweep(self, now: float) -> int:
        """Delete expired items and their index entries."""
        async with self._lock:
            db = await self._conn()
            await db.execute("BEGIN IMMEDIATE")
            try:
                await db.execute(
                    "DELETE FROM memory_fts WHERE rowid IN "
                    "(SELECT id FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= ?)",
                    (now,),
                )
                cursor = await db.execute(
                    "DELETE FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
                )
                await db.execute("COMMIT")
                return cursor.rowcount
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def count(self, prefix: str) -> int:
        """Items stored under `prefix`."""
        async with self._lock:
            db = await self._conn()
            cursor = await db.execute(
                f"SELECT count(*) FROM memory_items m WHERE {_UNDER}", prefix_bounds(prefix)
            )
            found = await cursor.fetchone()
            return int(found[0]) if found else 0

    async def transaction(self, work: Callable[[Sql], Awaitable[_T]]) -> _T:
        """Run `work` in one `BEGIN IMMEDIATE` transaction (SQLite's one writer: no lost update)."""
        async with self._lock:
            db = await self._conn()
            await db.execute("BEGIN IMMEDIATE")
            try:
                result = await work(_SqliteSql(db))
                await db.execute("COMMIT")
                return result
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        """Close the file."""
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def rows(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one statement (`?` placeholders) of another table's code (`store.files`); its rows."""
        async with self._lock:
            db = await self._conn()
            cursor = await db.execute(sql, parameters)
            return [tuple(values) for values in await cursor.fetchall()]

    async def _select(self, sql: str, parameters: tuple[Any, ...]) -> list[Row]:
        async with self._lock:
            db = await self._conn()
            cursor = await db.execute(sql, parameters)
            return [_row(values) for values in await cursor.fetchall()]


class _SqliteSql:
    """Statements on the connection of a transaction in progress."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

    async def fetch(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cursor = await self._db.execute(sql, parameters)
        return [tuple(values) for values in await cursor.fetchall()]
