"""`FileStore`: the records of the files users attached, on the store's database (table `files`, schema v2).

A record is what the payload store cannot say: who gave a file (its owner principal), for which
agent and thread, under which name and media type, and when. The bytes are in the payload store
under `sha256`; a record names them. Reads are by the owner only (`get(owner, id)`: another
principal's record is not found, as a missing one), and a principal's records add up to the bytes
its quota counts (`stored_bytes`). Erasing a thread deletes its records (`delete_thread`); a blob
is shared by every record (and every claim-checked payload) with the same bytes, so the blobs
stay (`docs/attachments.md`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from conversation.attachments import Attachment
from store.backend import Backend
from store.memory_store import MemoryStore, backend_for
from store.settings import store_url

__all__ = ["FileRecord", "FileStore"]

_COLUMNS: Final = "id, principal, agent, thread, name, media_type, size, sha256, created_at"


@dataclass(frozen=True)
class FileRecord:
    """One attached file: its reference (`attachment`), its owner, agent and thread, and when it came."""

    attachment: Attachment
    principal: str
    agent: str | None
    thread: str | None
    created_at: datetime


def _record(values: Sequence[Any]) -> FileRecord:
    file_id, principal, agent, thread, name, media_type, size, sha256, created = values
    attachment = Attachment(id=file_id, name=name, media_type=media_type, size=int(size), sha256=sha256)
    return FileRecord(attachment, principal, agent, thread, datetime.fromtimestamp(float(created), UTC))


class FileStore:
    """The file records on the database `url` names (default `REACT_STORE_URL`), opened on first use."""

    def __init__(self, url: str | None = None) -> None:
        """Bind the database; nothing connects until the first call."""
        self._url = url
        self._backend: Backend | None = None
        self._lock = asyncio.Lock()

    async def _db(self) -> Backend:
        async with self._lock:
            if self._backend is None:
                backend = backend_for(self._url or store_url())
                migrated = MemoryStore(backend)  # the store's one migration path (every table)
                try:
                    await migrated.migrate()
                except BaseException:
                    await migrated.close()
                    raise
                self._backend = backend
            return self._backend

    async def _rows(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        db = await self._db()
        return await MemoryStore(db).guarded(db.rows(sql, parameters))

    async def add(
        self, principal: str, attachments: Sequence[Attachment], *, agent: str | None, thread: str | None
    ) -> None:
        """Record `attachments` as `principal`'s (an id recorded before is left as it was).

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        now = time.time()
        for item in attachments:
            await self._rows(
                f"INSERT INTO files ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (item.id, principal, agent, thread, item.name, item.media_type, item.size, item.sha256, now),
            )

    async def get(self, principal: str, file_id: str) -> FileRecord | None:
        """`principal`'s record `file_id` (None: no such file, or another principal's)."""
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM files WHERE id = ? AND principal = ?", (file_id, principal)
        )
        return _record(rows[0]) if rows else None

    async def stored_bytes(self, principal: str) -> int:
        """The bytes of every file `principal` has recorded (what the quota counts)."""
        rows = await self._rows("SELECT COALESCE(SUM(size), 0) FROM files WHERE principal = ?", (principal,))
        return int(rows[0][0]) if rows else 0

    async def of_thread(self, principal: str, agent: str, thread: str) -> list[FileRecord]:
        """The records of one thread of `principal`'s, oldest first."""
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM files WHERE principal = ? AND agent = ? AND thread = ? "
            "ORDER BY created_at, id",
            (principal, agent, thread),
        )
        return [_record(row) for row in rows]

    async def delete_thread(self, principal: str, agent: str, thread: str) -> int:
        """Delete the records of one thread of `principal`'s; how many."""
        rows = await self._rows(
            "DELETE FROM files WHERE principal = ? AND agent = ? AND thread = ? RETURNING id",
            (principal, agent, thread),
        )
        return len(rows)

    async def delete_principal(self, principal: str) -> int:
        """Delete every record of `principal`'s (erasing a principal); how many."""
        rows = await self._rows("DELETE FROM files WHERE principal = ? RETURNING id", (principal,))
        return len(rows)

    async def delete_session(self, session_id: str) -> int:
        """Delete the typed client's records of a session (no agent, the session's id as thread); how many."""
        rows = await self._rows(
            "DELETE FROM files WHERE agent IS NULL AND thread = ? RETURNING id", (session_id,)
        )
        return len(rows)

    async def referenced(self, sha256: str) -> bool:
        """Whether any record names the bytes `sha256`."""
        return bool(await self._rows("SELECT 1 FROM files WHERE sha256 = ? LIMIT 1", (sha256,)))

    async def close(self) -> None:
        """Close the connection."""
        if self._backend is not None:
            backend, self._backend = self._backend, None
            await MemoryStore(backend).close()
