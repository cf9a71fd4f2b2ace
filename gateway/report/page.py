"""The evaluation report page: its files (`static/`), signed in as the chat page is.

    GET  /report                  the page (gateway/report/static/); `?evals=ID,ID` the evaluations shown
    GET  /report/static/...       its scripts and styles

The page holds no data: it reads `/api/evals/{id}`, `/api/evals/{a}/compare/{b}` and `/api/usage`
with the bearer token the chat page keeps (`/static/api.js`, the chat page's own module) and draws
its charts as SVG in the browser. The same report as one file is `GET /api/evals/{id}/report.html`
(`gateway.evals`).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gateway.server.page_headers import PAGE_HEADERS

__all__ = ["STATIC", "routes"]

STATIC = Path(__file__).parent / "static"


def routes() -> list[BaseRoute]:
    """The report page and its files."""
    return [
        Route("/report", _index, methods=["GET"]),
        Mount("/report/static", app=StaticFiles(directory=STATIC), name="report-static"),
    ]


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)
