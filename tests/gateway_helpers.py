"""A real gateway for the tests: uvicorn serving `gateway.app` on a free loopback port, on `agents`.

    from tests.gateway_helpers import GatewayServer, running_gateway

    async with running_gateway(agents, {"default": scripted_agent(answer("Hi"), stream=True)}) as gw:
        async with gw.http() as http:
            response = await http.post("/agui/default", json=run_input)

`running_gateway` starts one with your agents (default `TEST_AGENTS`), tokens and limits; a test
module usually keeps one for all its tests (a module-scoped fixture). The gateway runs
in the test's event loop (an in-process `uvicorn.Server`), with the `agents` fixture's dev server,
worker, task queue and payload store.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import pytest_asyncio
import uvicorn
from starlette.applications import Starlette

from contracts import AgentConfig
from gateway.app import build_app
from gateway.context import GatewayContext, build_context
from gateway.identity.settings import IdentitySettings
from gateway.settings import (
    GatewaySettings,
    MetricsAccess,
    default_agent_config,
    parse_tokens,
    token_entries,
)
from settings.attachment_policy import AttachmentPolicy
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call

__all__ = [
    "ALICE",
    "BOB",
    "JS_CLIENTS",
    "TEST_AGENTS",
    "TEST_TOKENS",
    "GatewayServer",
    "SseEvent",
    "agui_run",
    "auth",
    "installed_js_clients",
    "loopback_socket",
    "module_gateway",
    "read_sse",
    "run_input",
    "running_gateway",
    "text_of",
]

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789"
TEST_TOKENS = f"{ALICE}=alice,{BOB}=bob"


def auth(token: str) -> dict[str, str]:
    """The Authorization header of `token`."""
    return {"Authorization": f"Bearer {token}"}


TEST_AGENTS: Mapping[str, AgentConfig] = MappingProxyType(
    {
        "default": scripted_agent(answer("Hello from the gateway, streamed in small pieces."), stream=True),
        "slow": scripted_agent(
            answer("A slow answer " * 20).model_copy(update={"chunk_chars": 7, "chunk_delay_s": 0.05}),
            stream=True,
        ),
        "held": scripted_agent(
            # Long enough that the next ask reaches it running on a loaded machine (MCP's asks are slowest).
            answer("A held answer " * 20, delay_s=4).model_copy(update={"chunk_chars": 1000}),
            stream=True,
        ),
        "steerable": scripted_agent(
            answer("A slow answer " * 20).model_copy(update={"chunk_chars": 7, "chunk_delay_s": 0.05}),
            answer("Steered: the short version."),
            stream=True,
        ),
        "approver": scripted_agent(
            call_tools(tool_call("calculator", {"expression": "17 * 23"}, call_id="call-calc")),
            answer("17 * 23 = 391."),
            tools=["calculator"],
            approval_required=["calculator"],
            stream=True,
        ),
    }
)
"""The test agents: a short streamed answer, a slow one (twice, to steer), a held one (the answer in
one piece after 1.5 s), a tool call needing approval."""


@dataclass
class GatewayServer:
    """A running gateway: its base URL, app and context."""

    url: str
    app: Starlette
    ctx: GatewayContext

    def http(self, token: str | None = None, **options: object) -> httpx.AsyncClient:
        """An httpx client of the gateway (with `token` as its bearer token)."""
        headers = auth(token) if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60, **options)  # pyright: ignore[reportArgumentType]


def loopback_socket() -> socket.socket:
    """A listening socket on a free loopback port (a gateway's, when its URL is needed before it starts)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


@asynccontextmanager
async def running_gateway(
    env: AgentTestEnvironment,
    agents: Mapping[str, AgentConfig] | None = None,
    *,
    tokens: str = "",
    cors_origins: tuple[str, ...] = (),
    max_body_bytes: int = 256 * 1024,
    task_queue: str | None = None,
    identity: IdentitySettings | None = None,
    sock: socket.socket | None = None,
    metrics: MetricsAccess = "public",
    memory_store_url: str | None = None,
    attachments: AttachmentPolicy | None = None,
    upload_memory_bytes: int | None = None,
) -> AsyncIterator[GatewayServer]:
    """A gateway on a free loopback port of this event loop, on `env`'s worker, until the block ends.

    `identity`: its OpenID provider and quotas (the static tokens' scopes come from `tokens`);
    `sock`: the socket to serve on (`loopback_socket()`), when the test needs its URL first;
    `memory_store_url`: the store `/api/memory` uses (default `REACT_STORE_URL`);
    `attachments`: the attachment policy (default `AttachmentPolicy()`: no URL is fetched);
    `upload_memory_bytes`: the upload bodies held at once (default the gateway's).
    """
    scoped = [(token, scopes) for token, _, scopes in token_entries(tokens) if scopes is not None]
    identity = identity or IdentitySettings()
    identity = dataclasses.replace(identity, token_scopes={**identity.token_scopes, **dict(scoped)})
    chosen = dict(agents if agents is not None else TEST_AGENTS)
    chosen.setdefault("default", default_agent_config())
    settings = GatewaySettings(
        host="127.0.0.1",
        port=0,
        tokens=parse_tokens(tokens),
        cors_origins=cors_origins,
        max_body_bytes=max_body_bytes,
        agents=MappingProxyType(chosen),
        web_ui_url="http://localhost:8233",
        task_queue=task_queue or env.task_queue,
        identity=identity,
        metrics=metrics,
        memory_store_url=memory_store_url,
        attachments=attachments or AttachmentPolicy(),
    )
    if upload_memory_bytes is not None:
        settings = dataclasses.replace(settings, upload_memory_bytes=upload_memory_bytes)
    ctx = build_context(settings, env.client, env.store)
    app = build_app(ctx)
    sock = sock or loopback_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield GatewayServer(url=f"http://127.0.0.1:{port}", app=app, ctx=ctx)
    finally:
        server.should_exit = True  # open SSE streams are cut after `timeout_graceful_shutdown`
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        sock.close()


JS_CLIENTS = Path(__file__).resolve().parent / "js"
"""The official JavaScript clients' folder (tests/js: AG-UI, A2A, the AI SDK)."""


def installed_js_clients() -> Path:
    """tests/js with its node_modules installed from the lock file (a module-scoped fixture's body)."""
    assert shutil.which("node"), "node (20 or newer) is needed for the JavaScript client tests"
    lock = JS_CLIENTS / "package-lock.json"
    installed = JS_CLIENTS / "node_modules" / ".package-lock.json"
    # One test process at a time: `npm ci` empties node_modules first, so a second process's
    # client started meanwhile finds half a tree (`ERR_MODULE_NOT_FOUND`).
    with (JS_CLIENTS / ".install-lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=JS_CLIENTS, check=True, timeout=300
            )
    return JS_CLIENTS


def module_gateway() -> Any:
    """A module-scoped gateway fixture (`TEST_AGENTS`, `TEST_TOKENS`); a test module says `gateway = ...`."""

    @pytest_asyncio.fixture(scope="module", loop_scope="session")
    async def gateway(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
        async with running_gateway(agents, tokens=TEST_TOKENS) as server:
            yield server

    return gateway


@dataclass(frozen=True)
class SseEvent:
    """One SSE message of an AG-UI stream: its id and its decoded event."""

    id: str
    event: dict[str, Any]

    @property
    def type(self) -> str:
        """The AG-UI event type."""
        return str(self.event["type"])


async def read_sse(
    source: httpx.Response | AsyncIterator[str], *, stop_after: int | None = None
) -> list[SseEvent]:
    """The SSE messages of a response (or of its `aiter_lines()`), until it ends or `stop_after` came."""
    lines = source.aiter_lines() if isinstance(source, httpx.Response) else source
    found: list[SseEvent] = []
    event_id, data = "", ""
    async for line in lines:
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            found.append(SseEvent(event_id, json.loads(data)))
            event_id, data = "", ""
            if stop_after is not None and len(found) >= stop_after:
                break
    return found


def run_input(thread_id: str, run_id: str, text: str | None = "Hi", **fields: object) -> dict[str, object]:
    """A RunAgentInput body: one user message `text` (none: no messages), plus `fields`."""
    messages = [{"id": f"{run_id}-u", "role": "user", "content": text}] if text is not None else []
    return {"threadId": thread_id, "runId": run_id, "messages": messages, **fields}


async def agui_run(
    http: httpx.AsyncClient, body: dict[str, object], agent: str = "default"
) -> list[SseEvent]:
    """POST an AG-UI run and read its whole stream."""
    async with http.stream("POST", f"/agui/{agent}", json=body, headers={"Accept": "text/event-stream"}) as r:
        assert r.status_code == 200, await r.aread()
        return await read_sse(r)


def text_of(events: list[SseEvent]) -> str:
    """The streamed text of TEXT_MESSAGE_CONTENT events."""
    return "".join(str(e.event["delta"]) for e in events if e.type == "TEXT_MESSAGE_CONTENT")
