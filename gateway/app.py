"""The gateway's ASGI app: guards (CORS, tokens, body limit), health, AG-UI, the AI SDK, and the other routes.

Every request but `/healthz`, `/readyz`, the chat and report pages' files and A2A agent cards must carry a
valid bearer token when tokens are configured (`gateway.guard.static_tokens`); the principal is in
`request.state.principal` (`principal_of`). A body over its route's limit (`body_limit`:
`attachment_body_bytes` on the routes that carry attachments, `ATTACHMENT_PREFIXES` and `/mcp`;
`max_body_bytes` on every other) is refused with 413
`payload_too_large` before any route sees the request (in JSON-RPC's error shape on `/a2a/` and
`/mcp`): a declared length at once, a chunked body (no length) once its bytes pass the limit (the
guard reads a request's body, at most the limit, before the route does; every route reads its
body whole anyway). A body still arriving `body_timeout_s` after its headers gets 408
`invalid_input` (how long headers may take, and how many connections may be open, is
`gateway.server.connections`). A body nested deeper than `MAX_JSON_DEPTH` levels is refused by the same
guard, 400 `invalid_input` (a JSON-RPC parse error, -32700, on `/a2a/` and `/mcp`), before any
parser (the routes', `a2a-sdk`'s, `mcp`'s) recurses into it. A route reads JSON with `read_json`
(400 `invalid_input` for anything that is not JSON). `GET /metrics` is Prometheus' scrape
(`gateway.server.metrics`, docs/metrics.md): public by default, `agents:admin` only with
`REACT_GATEWAY_METRICS=admin`, absent with `off`; every request is counted by `RequestMetrics`,
outside the guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.errors import INVALID_INPUT, NOT_FOUND
from contracts.whole_numbers import whole_number
from gateway.a2a import routes as a2a_routes
from gateway.agents import routes as agents_routes
from gateway.agui import routes as agui_routes
from gateway.aisdk import routes as aisdk_routes
from gateway.chat import routes as chat_routes
from gateway.context import GatewayContext
from gateway.core.memory import GatewayMemory
from gateway.errors import GatewayError, error_body, error_headers, error_response
from gateway.evals.routes import EvalsApi
from gateway.files import routes as files_routes
from gateway.guard import chat_signin, resource_metadata
from gateway.guard.admission import Admission, admission_of
from gateway.http_input import check_json_depth, handing_on, principal_of, read_json
from gateway.identity.scopes import ADMIN, require
from gateway.jsonrpc import INVALID_REQUEST, PARSE_ERROR, jsonrpc_error_body
from gateway.mcp import McpEndpoint
from gateway.memory import routes as memory_routes
from gateway.report import routes as report_routes
from gateway.schedules import routes as schedules_routes
from gateway.server.metrics import REGISTRY, ActiveRuns, RequestMetrics
from gateway.server.upload_budget import UploadBudget
from gateway.settings import GatewaySettings
from gateway.threads import routes as threads_routes
from gateway.usage import UsageApi
from gateway.usage import routes as usage_routes

__all__ = ["build_app", "is_public", "principal_of", "read_json"]

METRICS_PATH = "/metrics"
PUBLIC_PATHS = frozenset({"/", "/report", "/healthz", "/readyz", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/", "/report/static/")
PUBLIC_SUFFIXES = ("/.well-known/agent-card.json",)
READY_TIMEOUT_S = 3.0
JSONRPC_PREFIXES = ("/a2a/", "/mcp")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
ATTACHMENT_PREFIXES = ("/ai-sdk/", "/agui/", "/a2a/", "/api/files")
"""The routes whose bodies may carry attachments (and `/mcp`): they take `attachment_body_bytes`."""
RAW_BODY_PATHS = frozenset({"/api/files"})
"""The routes whose body is a file's bytes, never parsed as JSON: no JSON depth check (an image's
bytes hold brackets at random, which the scan would count as nesting)."""

_log = logging.getLogger(__name__)


def body_limit(path: str, settings: GatewaySettings) -> int:
    """The largest body `path` takes: the attachment routes' limit, or `max_body_bytes` for every other."""
    if path.startswith(ATTACHMENT_PREFIXES) or path == "/mcp":
        return settings.attachment_body_bytes
    return settings.max_body_bytes


def is_public(path: str) -> bool:
    """Paths served without a token: health, the chat and report pages' files, A2A agent cards."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES) or path.endswith(PUBLIC_SUFFIXES)


class _Guard:
    """Authenticates every non-public request and refuses bodies over the limit (pure ASGI: streams pass)."""

    def __init__(self, app: ASGIApp, ctx: GatewayContext, identity: Admission) -> None:
        self._app = app
        self._ctx = ctx
        self._identity = identity
        self._uploads = UploadBudget(ctx.settings.upload_memory_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        async with contextlib.AsyncExitStack() as held:
            await self._guarded(scope, receive, send, held)

    async def _guarded(
        self, scope: Scope, receive: Receive, send: Send, held: contextlib.AsyncExitStack
    ) -> None:
        settings = self._ctx.settings
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            path = scope["path"]
            public = is_public(path) or (path == METRICS_PATH and settings.metrics == "public")
            principal = await self._identity.principal(headers, scope["path"], public=public)
            limit = body_limit(path, settings)
            declared = whole_number(headers.get("content-length", ""))
            if declared is not None and declared > limit:
                raise GatewayError.too_large(limit)
            if scope["method"] in BODY_METHODS:
                if path in RAW_BODY_PATHS:  # an authenticated upload, held to the budget until answered
                    size = declared if declared is not None else limit
                    await held.enter_async_context(self._uploads.hold(min(size, limit)))
                body, receive = await _read_body(receive, limit, settings.body_timeout_s)
                try:
                    if path not in RAW_BODY_PATHS:
                        check_json_depth(body)
                except GatewayError as err:
                    await _refusal(scope["path"], err, PARSE_ERROR)(scope, receive, send)
                    return
            receive, send = await self._identity.admit(scope, principal, receive, send)
        except GatewayError as err:
            await _refusal(scope["path"], err)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self._app(scope, receive, send)


async def _read_body(receive: Receive, limit: int, timeout_s: float) -> tuple[bytes, Receive]:
    """The request's body read up to `limit` (else `payload_too_large`), handed to the route as one message.

    The body must be whole within `timeout_s` (else 408 `invalid_input`: a slowly sent body holds
    no connection for long). Later calls reach the server's own `receive` (an SSE response listens
    there for the client leaving).
    """
    try:
        async with asyncio.timeout(timeout_s):
            return await _body(receive, limit)
    except TimeoutError:
        message = f"the request body did not arrive within {timeout_s:g} s"
        raise GatewayError(408, INVALID_INPUT, message) from None


async def _body(receive: Receive, limit: int) -> tuple[bytes, Receive]:
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left before its body was whole
            first: Message = message
            body = b""
            break
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > limit:
            raise GatewayError.too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            body = b"".join(chunks)
            first = {"type": "http.request", "body": body, "more_body": False}
            break
    return body, handing_on(first, receive)


def _refusal(path: str, err: GatewayError, jsonrpc_code: int = INVALID_REQUEST) -> Response:
    """The guard's refusal: JSON-RPC's error shape on the A2A and MCP endpoints, else the gateway's."""
    if path.startswith(JSONRPC_PREFIXES):
        return JSONResponse(
            jsonrpc_error_body(err, jsonrpc_code), status_code=err.status, headers=error_headers(err)
        )
    return error_response(err)


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _readyz(ctx: GatewayContext) -> Route:
    async def readyz(request: Request) -> Response:
        try:
            await asyncio.wait_for(ctx.client.service_client.check_health(), READY_TIMEOUT_S)
        except Exception as exc:
            # The probe's answer stays bare (it is public); the reason goes to the operator's log.
            _log.warning(
                "not ready: Temporal did not answer its health check (%s: %s)", type(exc).__name__, exc
            )
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    return Route("/readyz", readyz, methods=["GET"])


def _metrics(ctx: GatewayContext) -> list[Route]:
    """`GET /metrics` (Prometheus' text): public, `agents:admin` only, or absent, as the settings say."""
    if ctx.settings.metrics == "off":
        return []
    active_runs = ActiveRuns(ctx.client)

    async def metrics(request: Request) -> Response:
        if ctx.settings.metrics == "admin":
            principal = principal_of(request)
            require(principal, ADMIN)
        await active_runs.refresh()
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return [Route(METRICS_PATH, metrics, methods=["GET"])]


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = NOT_FOUND if exc.status_code in (404, 405) else "invalid_input"
    status = 404 if exc.status_code == 405 else exc.status_code
    err = GatewayError(status, code, "no such endpoint" if code == NOT_FOUND else str(exc.detail))
    return JSONResponse(error_body(err), status_code=err.status)


def build_app(ctx: GatewayContext) -> Starlette:
    """The gateway's app on `ctx` (the caller owns `ctx.client`; the app closes the hub on shutdown)."""
    memory = GatewayMemory(ctx)
    usage = UsageApi(ctx.settings.memory_store_url)
    evals = EvalsApi(ctx)
    mcp = McpEndpoint(ctx, memory)
    identity = admission_of(ctx)
    routes: list[BaseRoute] = [
        Route("/healthz", _healthz, methods=["GET"]),
        _readyz(ctx),
        *agui_routes(ctx),
        *aisdk_routes(ctx),
        *a2a_routes(ctx),
        mcp.route,
        *chat_routes(ctx),
        *report_routes(),
        *threads_routes(ctx),
        *files_routes(ctx),
        *resource_metadata.routes(ctx.settings.identity.oidc),
        *chat_signin.routes(ctx.settings.identity.oidc, ctx.settings.identity.quotas.signin_per_minute),
        *schedules_routes(ctx),
        *_metrics(ctx),
        *memory_routes(memory),
        *agents_routes(ctx),
        *usage_routes(usage),
        *evals.routes(),
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.run():
            yield
        await ctx.hub.aclose()
        await identity.aclose()
        await memory.close()
        await ctx.files.close()
        await ctx.catalog.close()
        await usage.close()
        await evals.close()

    middleware = [
        Middleware(RequestMetrics),  # outermost: it counts the guard's refusals too
        Middleware(
            CORSMiddleware,
            allow_origins=list(ctx.settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            allow_headers=["authorization", "content-type", "last-event-id", "accept"],
            max_age=600,
        ),
        Middleware(_Guard, ctx=ctx, identity=identity),
    ]
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={GatewayError: _gateway_error, HTTPException: _http_error},
    )
