"""The chat page: its files (`static/`) and the agents it may talk to.

    GET  /                the chat page (gateway/chat/static/)
    GET  /static/...      its scripts and styles

The agents' list (`GET /api/agents`) is `gateway.agents`'.

The page's threads are `/api/threads` (`gateway.threads`); its sign-in, `gateway.guard.chat_signin`.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gateway.context import GatewayContext

__all__ = ["STATIC", "routes"]

STATIC = Path(__file__).parent / "static"

PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    # The page's own files only, and no framing: its approve buttons cannot be clickjacked.
    # Images also from blob: URLs, the attachments' thumbnails (fetched with the bearer token).
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; img-src 'self' blob:"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The chat page and its files."""
    return [
        Route("/", _index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)
