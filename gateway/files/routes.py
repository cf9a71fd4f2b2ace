"""`GET /api/files/{id}` (a file's bytes, its owner's only) and `POST /api/files` (one file's upload).

The GET answers the caller's own file with its stored media type, `Content-Disposition:
attachment` (with its name), `X-Content-Type-Options: nosniff` and a `Content-Security-Policy`
that sandboxes anything a browser might still render: a file is downloaded, never shown inline
as a page of the gateway's origin. Another principal's file is 404 `not_found`, as a missing one.

The POST takes one file as the raw body (`Content-Type`: its declared media type; `?name=` its
name; `?agent=` and `?thread=` the thread it is for, so erasing the thread erases it) through the
one intake (`gateway.core.attachments`), and answers the `Attachment` (201): its `id` can then be
given instead of bytes (an AG-UI `file` source, an AI SDK file part's `url`, MCP's `file_id`).
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.attachment_intake import AttachmentSource
from gateway.context import GatewayContext
from gateway.core import open_thread
from gateway.core.attachments import open_file, take_attachments
from gateway.errors import GatewayError
from gateway.http_input import principal_of
from gateway.owners import check_thread_id

__all__ = ["FILE_HEADERS", "routes"]

FILE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, no-cache",
}
"""What every file answer carries beside its type and disposition."""


def disposition(name: str) -> str:
    """`attachment` with the file's name (ASCII fallback and RFC 5987's UTF-8 form)."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The `/api/files` routes on `ctx`."""

    async def download(request: Request) -> Response:
        record, data = await open_file(ctx, principal_of(request), request.path_params["file_id"])
        headers = {**FILE_HEADERS, "Content-Disposition": disposition(record.attachment.name)}
        return Response(data, media_type=record.attachment.media_type, headers=headers)

    async def upload(request: Request) -> Response:
        principal = principal_of(request)
        agent = request.query_params.get("agent") or "default"
        thread_id = request.query_params.get("thread")
        thread = await open_thread(
            ctx, principal, agent, check_thread_id(thread_id) if thread_id else "uploads"
        )
        body = await request.body()
        if not body:
            raise GatewayError.invalid_input("the body must be the file's bytes")
        source = AttachmentSource(
            name=request.query_params.get("name"),
            media_type=request.headers.get("content-type"),
            data=body,
        )
        del body
        taken = await take_attachments(ctx, thread, [source], request_id=None)
        return JSONResponse(taken[0].model_dump(mode="json"), status_code=201)

    return [
        Route("/api/files/{file_id}", download, methods=["GET"]),
        Route("/api/files", upload, methods=["POST"]),
    ]
