"""The gateway's Prometheus metrics: every request and refusal counted at one place, `RequestMetrics`.

`RequestMetrics` is the outermost ASGI layer of the app, so it sees every answer, the guard's
refusals included: the request's protocol (from its path), its operation (the guard's
classification, `gateway.identity.operations`, left in `scope["state"]["operations"]`), its status,
and for a refusal its code (read from the JSON error body, in the gateway's shape or JSON-RPC's).
Every label has a bounded set of values: protocols and operations are fixed names, a status is an
HTTP status, a code one of `contracts.errors` (else `other`); never a principal, thread or request
id. `GET /metrics` (gateway/app.py) serves `REGISTRY`. See docs/metrics.md.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Sequence
from typing import Any, Final, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from temporalio.client import Client

from contracts.errors import DESCRIPTIONS
from contracts.run import WORKFLOW_TYPE

__all__ = [
    "ACTIVE_RUNS",
    "OPERATIONS_STATE",
    "REFUSALS",
    "REGISTRY",
    "REQUESTS",
    "ActiveRuns",
    "RequestMetrics",
    "protocol_of",
]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The gateway's metrics (and its process's CPU, memory and open files)."""
ProcessCollector(registry=REGISTRY)

OPERATIONS_STATE: Final = "operations"
"""Where the guard leaves a request's operations in `scope["state"]` (the names of their actions)."""
PROTOCOLS: Final = (
    ("/agui/", "agui"),
    ("/ai-sdk/", "ai_sdk"),
    ("/a2a/", "a2a"),
    ("/mcp", "mcp"),
    ("/api/", "api"),
    ("/.well-known/", "discovery"),
)
"""Path prefix -> protocol, first match wins; other paths are `chat` (the page, its files) or `other`."""
ACTIONS: Final = frozenset(
    {"ask", "steer", "approve", "cancel", "fork", "reset", "configure", "read", "schedule"}
    | {"admin_read", "sign_in", "connect", "request", "history", "status"}
)
"""The operations a label may name (`gateway.identity.operations`' actions); others are `other`."""
ACTIVE_RUNS_QUERY: Final = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
ACTIVE_RUNS_CACHE_S = 5.0
COUNT_TIMEOUT_S = 3.0
MAX_BODY_READ = 8 * 1024
"""A refusal's body is read for its code up to this many bytes (refusals are small JSON)."""
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

REQUESTS = Counter(
    "react_gateway_requests",
    "HTTP requests the gateway answered, by protocol, operation and status.",
    ["protocol", "operation", "status"],
    registry=REGISTRY,
)
REFUSALS = Counter(
    "react_gateway_refusals",
    "Requests refused, by the product's refusal code (contracts/errors.py) and protocol.",
    ["code", "protocol"],
    registry=REGISTRY,
)
RESPONSE_START = Histogram(
    "react_gateway_response_start_seconds",
    "From a request's arrival to its response's headers (a stream's first byte), by protocol.",
    ["protocol"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
IN_FLIGHT = Gauge(
    "react_gateway_requests_in_flight",
    "Requests being answered now (open streams included), by protocol.",
    ["protocol"],
    registry=REGISTRY,
)
ACTIVE_RUNS = Gauge(
    "react_active_runs",
    "ReActRun workflows running in the namespace (a visibility count, read at most once per "
    "ACTIVE_RUNS_CACHE_S when /metrics is scraped; -1 when Temporal could not answer).",
    registry=REGISTRY,
)


def protocol_of(path: str) -> str:
    """The protocol a request path belongs to (a fixed name)."""
    for prefix, protocol in PROTOCOLS:
        if path.startswith(prefix):
            return protocol
    if path.startswith("/a2a") or path.endswith("/.well-known/agent-card.json"):
        return "a2a"
    if path in ("/", "/favicon.ico") or path.startswith("/static/"):
        return "chat"
    return "other"


def operation_of(scope: Scope) -> str:
    """The request's operation (the first the guard named; `none` when it classified none)."""
    state: dict[str, Any] = scope.get("state") or {}
    actions: Sequence[str] = state.get(OPERATIONS_STATE) or ()
    if not actions:
        return "none"
    return actions[0] if actions[0] in ACTIONS else "other"


def refusal_code(body: bytes) -> str:
    """The refusal code of an error body (`{"error": {"code"}}` or JSON-RPC's `error.data.code`)."""
    try:
        document: object = json.loads(body)
    except ValueError:
        return "other"
    error = _field(document, "error")
    code = _field(error, "code")
    if not isinstance(code, str):
        code = _field(_field(error, "data"), "code")
    return code if isinstance(code, str) and code in DESCRIPTIONS else "other"


def _field(document: object, name: str) -> object:
    return cast(dict[str, object], document).get(name) if isinstance(document, dict) else None


class ActiveRuns:
    """`react_active_runs` from Temporal's visibility, counted at a scrape at most once per `cache_s`."""

    def __init__(self, client: Client, cache_s: float = ACTIVE_RUNS_CACHE_S) -> None:
        """Count with `client`'s namespace."""
        self._client = client
        self._cache_s = cache_s
        self._read_at = -math.inf

    async def refresh(self) -> None:
        """Count again unless the last count is younger than `cache_s` (-1 when Temporal does not answer)."""
        if time.monotonic() - self._read_at < self._cache_s:
            return
        self._read_at = time.monotonic()
        try:
            counted = await asyncio.wait_for(self._client.count_workflows(ACTIVE_RUNS_QUERY), COUNT_TIMEOUT_S)
        except Exception:  # a scrape still answers: the gauge says the count is unknown
            ACTIVE_RUNS.set(-1)
            return
        ACTIVE_RUNS.set(counted.count)


class RequestMetrics:
    """The outermost layer: counts each request once its response starts (pure ASGI: streams pass)."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap `app`."""
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, counting it when its answer is over (or its client left)."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        protocol = protocol_of(scope["path"])
        started = time.monotonic()
        status = 0
        refused = False
        body = bytearray()
        in_flight = IN_FLIGHT.labels(protocol)
        in_flight.inc()

        async def measured(message: Message) -> None:
            nonlocal status, refused
            if message["type"] == "http.response.start":
                status = int(message["status"])
                RESPONSE_START.labels(protocol).observe(time.monotonic() - started)
                headers: list[tuple[bytes, bytes]] = message.get("headers", [])
                json_body = any(k.lower() == b"content-type" and b"json" in v for k, v in headers)
                refused = status >= 400 and json_body
            elif message["type"] == "http.response.body" and refused and len(body) < MAX_BODY_READ:
                body.extend(message.get("body", b"")[: MAX_BODY_READ - len(body)])
            await send(message)

        try:
            await self._app(scope, receive, measured)
        finally:
            in_flight.dec()
            REQUESTS.labels(protocol, operation_of(scope), str(status) if status else "none").inc()
            if refused:
                REFUSALS.labels(refusal_code(bytes(body)), protocol).inc()
