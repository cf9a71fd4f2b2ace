"""The evaluations' tables (schema version 5 of both backends; `store.evals` reads and writes them)."""

from __future__ import annotations

from typing import Final

from store.backend import Migration

EVALS_VERSION: Final = 5
_TABLES = (
    """CREATE TABLE evals (
        eval_id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        agent TEXT NOT NULL,
        dataset TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        cases INTEGER NOT NULL,
        created_at {real} NOT NULL,
        finished_at {real}
    )""",
    "CREATE INDEX evals_principal ON evals (principal, created_at)",
    """CREATE TABLE eval_cases (
        eval_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        result TEXT NOT NULL,
        PRIMARY KEY (eval_id, idx)
    )""",
)
SQLITE_EVALS: Final = Migration(EVALS_VERSION, tuple(s.format(real="REAL") for s in _TABLES))
POSTGRES_EVALS: Final = Migration(EVALS_VERSION, tuple(s.format(real="DOUBLE PRECISION") for s in _TABLES))
