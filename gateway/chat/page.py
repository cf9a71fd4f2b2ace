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
from gateway.server.page_headers import PAGE_HEADERS

__all__ = ["STATIC", "routes"]

STATIC = Path(__file__).parent / "static"


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The chat page and its files."""
    return [
        Route("/", _index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]


async def _index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)
