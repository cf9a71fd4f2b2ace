"""Bad files through every front end: each refused by name in the protocol's own shape, nothing asked.

One gateway with small limits (64 KiB a file, 2 files a message, URLs from 127.0.0.1 only). For
the AI SDK and AG-UI (the gateway's JSON error, before any stream), A2A (a JSON-RPC error whose
data names the product's code) and MCP (the `ask` tool's error result, with the `mcp` client):
a file over the limit (`payload_too_large`, naming it), too many files, bytes that are not the
declared type, bad base64, a data URL without a type, a URL the allow-list refuses, an unknown
file id and another principal's. After each, the thread does not exist. A URL that is allowed is
fetched once and stored (its bytes come back from the files route); a redirect is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from settings.attachment_policy import AttachmentPolicy
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.attachment_delivery import File, delivered, pdf, png, thread_messages
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, loopback_socket, running_gateway
from tests.mcp_helpers import mcp_client, result_of

LIMIT = 64 * 1024
POLICY = AttachmentPolicy.from_env(
    {
        "REACT_ATTACHMENT_MAX_BYTES": "64KiB",
        "REACT_ATTACHMENTS_PER_MESSAGE": "2",
        "REACT_ATTACHMENT_URL_ALLOW": "127.0.0.1",
    }
)
SMALL = File("small.png", "image/png", png(2_000))
BIG = File("big.png", "image/png", png(80_000))
NOT_AN_IMAGE = File("fake.png", "image/png", pdf(2_000))
V1 = {"A2A-Version": "1.0"}


@dataclass(frozen=True)
class Spec:
    """A file as a test gives it: base64 bytes, a URL, or a file id (with a declared name and type)."""

    name: str
    media_type: str
    b64: str | None = None
    url: str | None = None
    file_id: str | None = None


def of(file: File) -> Spec:
    """`file` as base64."""
    return Spec(file.name, file.media_type, b64=file.base64)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    agent = {"default": scripted_agent(answer("Seen."), stream=True)}
    async with running_gateway(agents, agent, tokens=TEST_TOKENS, attachments=POLICY) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def files_site() -> AsyncIterator[str]:
    """A web server on 127.0.0.1 with `/small.png` and a `/moved` that redirects to it."""

    async def small(request: web.Request) -> web.Response:
        return web.Response(body=SMALL.data, content_type="image/png")

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/small.png")

    app = web.Application()
    app.router.add_get("/small.png", small)
    app.router.add_get("/moved", moved)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = loopback_socket()
    port: int = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _url(spec: Spec) -> str:
    if spec.url is not None:
        return spec.url
    if spec.file_id is not None:
        return f"/api/files/{spec.file_id}"
    return f"data:{spec.media_type};base64,{spec.b64}"


async def via_aisdk(gw: GatewayServer, thread: str, specs: list[Spec]) -> str:
    parts: list[dict[str, Any]] = [
        {"type": "file", "mediaType": s.media_type, "filename": s.name, "url": _url(s)} for s in specs
    ]
    body = {
        "id": thread,
        "trigger": "submit-message",
        "messages": [
            {
                "id": f"u{uuid.uuid4().hex[:12]}",
                "role": "user",
                "parts": [*parts, {"type": "text", "text": "Look"}],
            }
        ],
    }
    async with gw.http(ALICE) as http:
        answer = await http.post("/ai-sdk/default", json=body)
    assert answer.status_code >= 400, answer.text
    return answer.json()["error"]["code"]


async def via_agui(gw: GatewayServer, thread: str, specs: list[Spec]) -> str:
    def source(s: Spec) -> dict[str, Any]:
        if s.file_id is not None:
            return {"type": "file", "value": s.file_id}
        if s.url is not None:
            return {"type": "url", "value": s.url, "mimeType": s.media_type}
        return {"type": "data", "value": s.b64, "mimeType": s.media_type}

    parts = [{"type": "image", "source": source(s), "metadata": {"filename": s.name}} for s in specs]
    run = f"run-{uuid.uuid4().hex[:10]}"
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": run,
        "messages": [
            {"id": f"{run}-u", "role": "user", "content": [{"type": "text", "text": "Look"}, *parts]}
        ],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    async with gw.http(ALICE) as http:
        answer = await http.post("/agui/default", json=body)
    assert answer.status_code >= 400, answer.text
    return answer.json()["error"]["code"]


async def via_a2a(gw: GatewayServer, thread: str, specs: list[Spec]) -> str:
    def part(s: Spec) -> dict[str, Any]:
        if s.b64 is not None and s.url is None:
            return {"raw": s.b64, "mediaType": s.media_type, "filename": s.name}
        return {"url": _url(s), "mediaType": s.media_type, "filename": s.name}

    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "contextId": thread,
        "parts": [{"text": "Look"}, *(part(s) for s in specs)],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    async with gw.http(ALICE) as http:
        reply = (await http.post("/a2a/default", json=body, headers=V1)).json()
    assert "error" in reply, reply
    data: Any = reply["error"].get("data")
    if isinstance(data, list):
        details: list[dict[str, Any]] = [d for d in data if isinstance(d, dict) and "metadata" in d]  # pyright: ignore[reportUnknownVariableType]
        return details[0]["metadata"]["code"]
    return data["code"]


async def via_mcp(gw: GatewayServer, thread: str, specs: list[Spec]) -> str:
    files = [
        {"file_id": s.file_id} if s.file_id else {"name": s.name, "media_type": s.media_type, "data": s.b64}
        for s in specs
    ]
    async with mcp_client(gw, ALICE) as client:
        result = await client.call_tool("ask", {"query": "Look", "session": thread, "attachments": files})
    assert result.is_error, result_of(result)
    return result_of(result)["error"]["code"]


SENDERS = {"aisdk": via_aisdk, "agui": via_agui, "a2a": via_a2a, "mcp": via_mcp}


async def bobs_file(gw: GatewayServer) -> str:
    async with gw.http(BOB) as http:
        uploaded = await http.post("/api/files", content=SMALL.data, headers={"content-type": "image/png"})
    assert uploaded.status_code == 201, uploaded.text
    return uploaded.json()["id"]


@pytest.mark.parametrize("protocol", sorted(SENDERS))
async def test_bad_files_are_refused_by_name_and_nothing_is_asked(gw: GatewayServer, protocol: str) -> None:
    send = SENDERS[protocol]
    cases: dict[str, tuple[list[Spec], str]] = {
        "over the limit": ([of(BIG)], "payload_too_large"),
        "too many": ([of(SMALL)] * 3, "too_many_attachments"),
        "not the declared type": ([of(NOT_AN_IMAGE)], "media_type_mismatch"),
        "unknown file id": ([Spec("x.png", "image/png", file_id="f-" + "0" * 32)], "not_found"),
        "another principal's file": ([Spec("x.png", "image/png", file_id=await bobs_file(gw))], "not_found"),
    }
    if protocol != "a2a":  # A2A's raw bytes are protobuf bytes: its base64 is the SDK's to parse
        cases["bad base64"] = ([Spec("x.png", "image/png", b64="not base64!")], "invalid_attachment")
    if protocol != "mcp":  # MCP's attachments are base64, never URLs
        cases["a data URL without a type"] = (
            [Spec("x.png", "image/png", url="data:;base64,aGk=")],
            "invalid_attachment",
        )
        cases["a URL the allow-list refuses"] = (
            [Spec("x.png", "image/png", url="http://10.9.8.7/x.png")],
            "url_refused",
        )
        cases["bad base64 in a data URL"] = (
            [Spec("x.png", "image/png", url="data:image/png;base64,!!")],
            "invalid_attachment",
        )
    for name, (specs, code) in cases.items():
        thread = f"bad-{uuid.uuid4().hex[:10]}"
        assert await send(gw, thread, specs) == code, name
        assert await thread_messages(gw, ALICE, "default", thread) == [], f"{name}: the thread changed"


async def test_the_limit_is_named(gw: GatewayServer) -> None:
    async with gw.http(ALICE) as http:
        answer = await http.post(
            "/api/files", content=BIG.data, headers={"content-type": "image/png"}, params={"name": "big.png"}
        )
    assert answer.status_code == 413
    assert f"{LIMIT:,} bytes per file" in answer.json()["error"]["message"]


async def test_an_allowed_url_is_fetched_once_and_a_redirect_is_refused(
    gw: GatewayServer, files_site: str
) -> None:
    thread = f"url-{uuid.uuid4().hex[:10]}"
    spec = Spec("small.png", "image/png", url=f"{files_site}/small.png")
    parts = [{"type": "file", "mediaType": "image/png", "filename": "small.png", "url": spec.url}]
    body = {
        "id": thread,
        "trigger": "submit-message",
        "messages": [{"id": "u-url-1", "role": "user", "parts": [*parts, {"type": "text", "text": "Look"}]}],
    }
    async with gw.http(ALICE) as http:
        answer = await http.post("/ai-sdk/default", json=body)
        assert answer.status_code == 200, answer.text
        _ = answer.text  # the whole stream: the request has ended
    await delivered(gw, ALICE, "alice", "default", thread, [SMALL])
    moved = f"moved-{uuid.uuid4().hex[:10]}"
    assert (
        await via_aisdk(gw, moved, [Spec("x.png", "image/png", url=f"{files_site}/moved")]) == "url_refused"
    )
    assert await thread_messages(gw, ALICE, "default", moved) == []
