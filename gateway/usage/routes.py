"""`GET /api/usage?from=&to=&group_by=`: the caller's usage by group; `agents:admin`: everyone's.

    GET /api/usage?from=2026-12-01&to=2026-12-02&group_by=agent,version,day
        {"rows": [{"agent", "version", "day", "requests", "failed", "prompt_tokens",
                   "completion_tokens", "cost_usd", "latency_ms_p50", "latency_ms_p99"}]}

A row holds the keys it is grouped by (a `version` of null: a code profile) and its sums. A caller
sees the rows of its own requests; a caller with `agents:admin` sees every principal's, each row
with its `principal`. `from`, `to` and `group_by` are checked by `store.usage.report_query` (400
`invalid_input` naming the parameter); a store that does not answer is 503 `unavailable`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.usage import UsageReports
from contracts.usage import UsageReportRow
from gateway.core.store_calls import store_call
from gateway.http_input import principal_of
from gateway.identity.scopes import ADMIN
from store.usage import ReportQuery, everyone, report_query

__all__ = ["UsageApi", "routes"]


class UsageApi:
    """The usage route, on one `UsageReports` of the gateway's store (opened on first use)."""

    def __init__(self, store_url: str | None) -> None:
        """Bind the store (`GatewaySettings.memory_store_url`); nothing connects yet."""
        self._reports = UsageReports(store_url)

    async def report(self, request: Request) -> Response:
        """The caller's rows (everyone's, with `principal`, for `agents:admin`)."""
        principal = principal_of(request)
        params = request.query_params
        admin = ADMIN in principal.scopes

        async def read() -> tuple[ReportQuery, list[UsageReportRow]]:
            query = report_query(params.get("from"), params.get("to"), params.get("group_by"))
            if admin:
                query = everyone(query)
            return query, await self._reports.rows(query, None if admin else principal.name)

        query, rows = await store_call(read())
        return JSONResponse({"rows": [row.shown(query.group_by) for row in rows]})

    async def close(self) -> None:
        """Close the store."""
        await self._reports.close()


def routes(api: UsageApi) -> list[BaseRoute]:
    """The usage route over `api`."""
    return [Route("/api/usage", api.report, methods=["GET"])]
