"""`UsageReports`: the typed client of the usage rows in the long-term store (docs/usage.md).

    async with UsageReports() as usage:                       # REACT_STORE_URL
        rows = await usage.report("2026-12-01", "2026-12-02", "agent,day", principal="alice")
        everyone = await usage.report(group_by=["principal", "agent"])   # every principal's

A report groups the rows of its days (`from` and `to` included, UTC) by its keys
(`contracts.usage.GROUP_KEYS`) and gives each group's requests, failures, tokens, cost and
latency percentiles. Bad input is a `store.StoreInputError` naming the parameter (nothing read);
a database that does not answer is `StoreUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from types import TracebackType

from clients.memory import OpenedStore
from contracts.usage import UsageReportRow
from store.usage import ReportQuery, report_query

__all__ = ["UsageReports"]


class UsageReports:
    """Usage reports on the store `url` names (default `REACT_STORE_URL`), opened on the first call."""

    def __init__(self, url: str | None = None) -> None:
        """Bind the store; nothing connects until the first call."""
        self._opened = OpenedStore(url)

    async def report(
        self,
        start: str | date | None = None,
        end: str | date | None = None,
        group_by: str | Sequence[str] | None = None,
        *,
        principal: str | None = None,
    ) -> list[UsageReportRow]:
        """The groups of days `start`..`end` (default: the last 30 days), of `principal` (None: everyone).

        Raises:
            StoreInputError: a bad day, range or key, by name (`store.usage.report_query`).
            StoreUnavailableError: the database did not answer.
        """
        return await self.rows(report_query(start, end, group_by), principal)

    async def rows(self, query: ReportQuery, principal: str | None = None) -> list[UsageReportRow]:
        """The groups of a checked `query` (`store.usage.report_query`), of `principal` (None: everyone).

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        return await (await self._opened.get()).usage.report(query, principal)

    async def close(self) -> None:
        """Close the store."""
        await self._opened.close()

    async def __aenter__(self) -> UsageReports:
        """This client; the store opens on the first call."""
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Close the store."""
        await self.close()
