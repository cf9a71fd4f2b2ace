"""Usage in the store: one row per request (`usage_requests`, schema version 4), reported by group.

A row is written once: its key is (session id, request id), and a second write of one key
(a retried `record_usage` activity) changes nothing (`INSERT ... ON CONFLICT DO NOTHING`, in
both dialects). A report reads the rows of a range of days (one principal's, or everyone's)
and groups them in Python: the sums, and the latency percentiles by nearest rank, the same on
SQLite and PostgreSQL. Rows are small (about 200 bytes) and never expire: the table grows by one
row per request; `UsageStore.prune` deletes the days before a cutoff (docs/usage.md).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final, TypeVar, cast

from contracts.usage import (
    DEFAULT_GROUP_BY,
    GROUP_KEYS,
    MAX_REPORT_DAYS,
    GroupKey,
    UsageRecord,
    UsageReportRow,
)
from store.backend import Backend, Migration
from store.errors import StoreInputError

_T = TypeVar("_T")
Guard = Callable[[Awaitable[Any]], Awaitable[Any]]

USAGE_SCHEMA_VERSION: Final = 4
DEFAULT_REPORT_DAYS: Final = 30
"""The days a report covers when it names no `from` (up to `to`, default today, UTC)."""
_INDEXES: Final = (
    "CREATE INDEX usage_requests_day ON usage_requests (day, principal)",
    "CREATE INDEX usage_requests_principal ON usage_requests (principal, day)",
)
SQLITE_MIGRATION: Final = Migration(
    USAGE_SCHEMA_VERSION,
    (
        """CREATE TABLE usage_requests (
            session_id TEXT NOT NULL,
            request_id TEXT NOT NULL,
            principal TEXT NOT NULL,
            agent TEXT NOT NULL,
            version INTEGER,
            status TEXT NOT NULL,
            failed INTEGER NOT NULL,
            day TEXT NOT NULL,
            ended_at REAL NOT NULL,
            latency_ms INTEGER NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            PRIMARY KEY (session_id, request_id)
        )""",
        *_INDEXES,
    ),
)
POSTGRES_MIGRATION: Final = Migration(
    USAGE_SCHEMA_VERSION,
    (
        """CREATE TABLE usage_requests (
            session_id TEXT COLLATE "C" NOT NULL,
            request_id TEXT COLLATE "C" NOT NULL,
            principal TEXT COLLATE "C" NOT NULL,
            agent TEXT COLLATE "C" NOT NULL,
            version INTEGER,
            status TEXT NOT NULL,
            failed INTEGER NOT NULL,
            day TEXT COLLATE "C" NOT NULL,
            ended_at DOUBLE PRECISION NOT NULL,
            latency_ms BIGINT NOT NULL,
            prompt_tokens BIGINT NOT NULL,
            completion_tokens BIGINT NOT NULL,
            cost_usd DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (session_id, request_id)
        )""",
        *_INDEXES,
    ),
)
_COLUMNS: Final = (
    "session_id, request_id, principal, agent, version, status, failed, day, ended_at, latency_ms, "
    "prompt_tokens, completion_tokens, cost_usd"
)


@dataclass(frozen=True)
class ReportQuery:
    """A report's checked range (both days included) and keys (`report_query`)."""

    start: date
    end: date
    group_by: tuple[GroupKey, ...]


def everyone(query: ReportQuery) -> ReportQuery:
    """`query` as a report of every principal's rows: grouped by `principal` first (each row names it)."""
    if "principal" in query.group_by:
        return query
    return ReportQuery(query.start, query.end, ("principal", *query.group_by))


def _day(text: str | date | None, name: str) -> date | None:
    if text is None or isinstance(text, date):
        return text
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise StoreInputError(f"{name} must be a day, YYYY-MM-DD (UTC), not {text[:40]!r}") from None


def report_query(
    start: str | date | None = None,
    end: str | date | None = None,
    group_by: str | Sequence[str] | None = None,
    *,
    today: date | None = None,
) -> ReportQuery:
    """The report `from`, `to` and `group_by` name, checked (every surface's one rule).

    `to` defaults to today (UTC), `from` to `DEFAULT_REPORT_DAYS` days up to `to`; `group_by` is a
    comma-separated list (or a list) of `GROUP_KEYS`, default `agent,version,day`.

    Raises:
        StoreInputError: `invalid_input` naming the parameter: a day that is not `YYYY-MM-DD`,
            `from` after `to`, a range over `MAX_REPORT_DAYS` days, an unknown or repeated key.
    """
    last = _day(end, "to") or today or datetime.now(UTC).date()
    first = _day(start, "from") or last - timedelta(days=DEFAULT_REPORT_DAYS - 1)
    if first > last:
        raise StoreInputError(f"from ({first}) must not be after to ({last})")
    if (last - first).days + 1 > MAX_REPORT_DAYS:
        raise StoreInputError(
            f"from..to covers {(last - first).days + 1} days; the limit is {MAX_REPORT_DAYS}"
        )
    if group_by is None:
        keys: list[str] = list(DEFAULT_GROUP_BY)
    else:
        keys = [k.strip() for k in group_by.split(",")] if isinstance(group_by, str) else list(group_by)
    for key in keys:
        if key not in GROUP_KEYS:
            raise StoreInputError(
                f"group_by key {key[:40]!r} is unknown; the keys are {', '.join(GROUP_KEYS)}"
            )
    if len(set(keys)) != len(keys):
        raise StoreInputError("group_by names a key twice")
    return ReportQuery(first, last, tuple(cast(list[GroupKey], keys)))


def percentile(ordered: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile of ascending `ordered` (not empty): the value at rank ceil(f * n)."""
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class UsageStore:
    """The usage rows of one store's database (`MemoryStore.usage`)."""

    def __init__(self, backend: Backend, guard: Guard) -> None:
        """Rows on `backend`; `guard` turns a database that does not answer into `StoreUnavailableError`."""
        self._backend = backend
        self._guard = guard

    async def _sql(self, statement: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = await self._guard(self._backend.rows(statement, parameters))
        return rows

    async def record(self, usage: UsageRecord) -> bool:
        """Write the request's row; False when it is written already (nothing changed).

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        marks = ", ".join("?" for _ in _COLUMNS.split(","))
        written = await self._sql(
            f"INSERT INTO usage_requests ({_COLUMNS}) VALUES ({marks}) "
            "ON CONFLICT (session_id, request_id) DO NOTHING RETURNING 1",
            (
                usage.session_id,
                usage.request_id,
                usage.principal,
                usage.agent,
                usage.version,
                usage.status,
                int(usage.failed),
                usage.day,
                usage.ended_at,
                usage.latency_ms,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cost_usd,
            ),
        )
        return bool(written)

    async def report(self, query: ReportQuery, principal: str | None) -> list[UsageReportRow]:
        """The rows of `query`'s days grouped by its keys, in key order (None first).

        `principal` None reads every principal's rows.

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        where = "day >= ? AND day <= ?"
        group_by = query.group_by
        parameters: tuple[Any, ...] = (query.start.isoformat(), query.end.isoformat())
        if principal is not None:
            where += " AND principal = ?"
            parameters = (*parameters, principal)
        found = await self._sql(
            "SELECT principal, agent, version, day, failed, prompt_tokens, completion_tokens, cost_usd, "
            f"latency_ms FROM usage_requests WHERE {where}",
            parameters,
        )
        groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for row in found:
            keys = {"principal": row[0], "agent": row[1], "version": row[2], "day": row[3]}
            groups.setdefault(tuple(keys[k] for k in group_by), []).append(row)
        report: list[UsageReportRow] = []
        for key in sorted(groups, key=lambda k: tuple((v is not None, v) for v in k)):
            rows = groups[key]
            latencies = sorted(int(r[8]) for r in rows)
            report.append(
                UsageReportRow(
                    **dict(zip(group_by, key, strict=True)),
                    requests=len(rows),
                    failed=sum(int(r[4]) for r in rows),
                    prompt_tokens=sum(int(r[5]) for r in rows),
                    completion_tokens=sum(int(r[6]) for r in rows),
                    cost_usd=round(sum(float(r[7]) for r in rows), 6),
                    latency_ms_p50=percentile(latencies, 0.50),
                    latency_ms_p99=percentile(latencies, 0.99),
                )
            )
        return report

    async def prune(self, before: date) -> int:
        """Delete the rows of the days before `before`; how many.

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        deleted = await self._sql(
            "DELETE FROM usage_requests WHERE day < ? RETURNING 1", (before.isoformat(),)
        )
        return len(deleted)
