"""The schema version 2 of the store: the `files` table, one row per attachment a user gave.

Its own module so the backends (`store.sqlite_backend`, `store.postgres_backend`) add it to their
migrations without importing the file records' code (`store.files`), which imports them.
"""

from __future__ import annotations

from typing import Final

from store.backend import Migration

__all__ = ["POSTGRES_FILES_MIGRATION", "SQLITE_FILES_MIGRATION"]

_INDEXES: Final = (
    "CREATE INDEX files_thread ON files (principal, agent, thread)",
    "CREATE INDEX files_blob ON files (sha256)",
)
SQLITE_FILES_MIGRATION: Final = Migration(
    2,
    (
        """CREATE TABLE files (
            id TEXT PRIMARY KEY,
            principal TEXT NOT NULL,
            agent TEXT,
            thread TEXT,
            name TEXT NOT NULL,
            media_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        *_INDEXES,
    ),
)
POSTGRES_FILES_MIGRATION: Final = Migration(
    2,
    (
        """CREATE TABLE files (
            id TEXT COLLATE "C" PRIMARY KEY,
            principal TEXT COLLATE "C" NOT NULL,
            agent TEXT COLLATE "C",
            thread TEXT COLLATE "C",
            name TEXT NOT NULL,
            media_type TEXT NOT NULL,
            size BIGINT NOT NULL,
            sha256 TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
        *_INDEXES,
    ),
)
