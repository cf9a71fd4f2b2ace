"""`client.py usage`: the usage rows of the long-term store, by group (docs/usage.md).

Every principal's rows (each naming its `principal`), or --principal's; the days --from to --to
(UTC, both included; default the last 30 days), grouped by --group-by (default
`agent,version,day`). Rows print as JSON, one a line. Bad input is refused by name (exit 1).
The store is the one `REACT_STORE_URL` names (default `.temporal/store.db`), or --store-url.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from cli.common import say
from cli.params import option
from clients.usage import UsageReports
from contracts.usage import UsageReportRow
from store import StoreError
from store.usage import everyone, report_query


def usage(
    start: Annotated[str | None, option("--from", help="The first day, YYYY-MM-DD (UTC).")] = None,
    end: Annotated[str | None, option("--to", help="The last day, YYYY-MM-DD (default: today).")] = None,
    group_by: Annotated[
        str | None, option(help="Comma-separated keys: principal, agent, version, day.")
    ] = None,
    principal: Annotated[str | None, option(help="Only this principal's rows (default: everyone's).")] = None,
    store_url: Annotated[
        str | None, option(help="The store (default: REACT_STORE_URL, else .temporal/store.db).")
    ] = None,
) -> None:
    """Print requests, failures, tokens, cost and latency p50/p99 per group, one JSON row a line."""

    async def read() -> tuple[tuple[str, ...], list[UsageReportRow]]:
        query = report_query(start, end, group_by)
        if principal is None:
            query = everyone(query)
        async with UsageReports(store_url) as reports:
            return query.group_by, await reports.rows(query, principal)

    try:
        keys, rows = asyncio.run(read())
    except StoreError as exc:
        say(f"refused ({exc.code}): {exc.message}", "red")
        raise typer.Exit(1) from None
    for row in rows:
        say(json.dumps(row.shown(keys), ensure_ascii=False))
