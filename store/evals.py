"""Evaluations in the store: each evaluation's row and each scored case's row (schema version 5).

The gateway creates an evaluation's row (`running`) before it starts its `EvalRun`; the worker's
`score_eval_case` activity writes each case (an upsert by `(eval_id, idx)`: a retried activity
writes the same row again) and `finish_eval` its end. Everything is read back by its maker only:
`get` takes the principal and finds nothing of another principal's.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from contracts.evals import CaseResult, EvalStatus
from store.errors import StoreInputError, guarded
from store.postgres_backend import PostgresBackend
from store.settings import is_postgres, sqlite_path, store_url
from store.sqlite_backend import SqliteBackend


@dataclass(frozen=True)
class EvalRecord:
    """An evaluation's row and its scored cases (in case order)."""

    eval_id: str
    principal: str
    agent: str
    dataset: str
    status: EvalStatus
    error: str | None
    case_count: int
    created_at: float
    finished_at: float | None
    cases: list[CaseResult]


class EvalStore:
    """The evaluations' rows on the store `REACT_STORE_URL` names (SQLite or PostgreSQL)."""

    def __init__(self, url: str | None = None) -> None:
        """A store on `url` (default `REACT_STORE_URL`); it opens and migrates on first use."""
        url = url or store_url()
        path = sqlite_path(url)
        if path is None and not is_postgres(url):
            raise StoreInputError("REACT_STORE_URL must start with sqlite:/// or postgresql://")
        self._backend = SqliteBackend(path) if path is not None else PostgresBackend(url)
        self._migrated = False

    async def _sql(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return await guarded(self._rows(sql, parameters))

    async def _rows(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if not self._migrated:
            await self._backend.migrate()
            self._migrated = True
        return await self._backend.rows(sql, parameters)

    async def create(self, eval_id: str, principal: str, agent: str, dataset: str, cases: int) -> None:
        """Record a new evaluation, `running`."""
        await self._sql(
            "INSERT INTO evals (eval_id, principal, agent, dataset, status, cases, created_at) "
            "VALUES (?, ?, ?, ?, 'running', ?, ?)",
            (eval_id, principal, agent, dataset, cases, time.time()),
        )

    async def put_case(self, eval_id: str, result: CaseResult) -> None:
        """Write (or write again) one scored case."""
        await self._sql(
            "INSERT INTO eval_cases (eval_id, idx, result) VALUES (?, ?, ?) "
            "ON CONFLICT (eval_id, idx) DO UPDATE SET result = excluded.result",
            (eval_id, result.index, result.model_dump_json()),
        )

    async def finish(self, eval_id: str, status: EvalStatus, error: str | None) -> None:
        """Record the evaluation's end (a repeat writes the same)."""
        await self._sql(
            "UPDATE evals SET status = ?, error = ?, finished_at = ? WHERE eval_id = ?",
            (status, error, time.time(), eval_id),
        )

    async def get(self, eval_id: str, principal: str) -> EvalRecord | None:
        """The evaluation and its cases, if it is `principal`'s (None otherwise, as for a missing one)."""
        rows = await self._sql(
            "SELECT eval_id, principal, agent, dataset, status, error, cases, created_at, finished_at "
            "FROM evals WHERE eval_id = ? AND principal = ?",
            (eval_id, principal),
        )
        if not rows:
            return None
        cases = await self._sql("SELECT result FROM eval_cases WHERE eval_id = ? ORDER BY idx", (eval_id,))
        eid, owner, agent, dataset, status, error, count, created, finished = rows[0]
        return EvalRecord(
            eid,
            owner,
            agent,
            dataset,
            status,
            error,
            int(count),
            float(created),
            None if finished is None else float(finished),
            [CaseResult.model_validate(json.loads(text)) for (text,) in cases],
        )

    async def close(self) -> None:
        """Close the connection."""
        await self._backend.close()


@asynccontextmanager
async def open_evals(url: str | None = None) -> AsyncIterator[EvalStore]:
    """An `EvalStore`, closed on exit."""
    evals = EvalStore(url)
    try:
        yield evals
    finally:
        await evals.close()
