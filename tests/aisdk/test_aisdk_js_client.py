"""The official AI SDK client (npm `ai` 7) reads what `gateway.aisdk.chunks` writes.

A small Starlette app on uvicorn (127.0.0.1) serves scripted run events through the encoder, as the
gateway's route will: `POST /chat` reads the SDK's chat request with `parse_chat_request` and
answers with the chunks of a scripted request (an answer, a call waiting for approval and its
continuation once approved, a failure), `GET /chat/{id}/stream` is the SDK's resume route (the
running request from its start; 204 for any other chat). node runs tests/js/aisdk_client.mjs, which
uses the SDK's own `DefaultChatTransport` and `readUIMessageStream` and prints the UI messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.aisdk.chat_request import parse_chat_request
from gateway.aisdk.chunks import DONE, UI_MESSAGE_STREAM_HEADERS, Chunk, RequestChunks, sse
from gateway.errors import GatewayError, error_body
from tests.aisdk_helpers import CALL_ID, RunEvent, answer_run, approval_run, failed_run

JS = Path(__file__).resolve().parents[1] / "js"
TOKEN = "aisdk-token-0123456789"
RUNNING_CHAT = "chat-running"
APPROVAL_REQUEST = "req-approval"


def _chunks(request_id: str, events: Sequence[RunEvent], *, origin: int = -1) -> list[Chunk]:
    encoder = RequestChunks(request_id, origin=origin)
    out = encoder.start()
    for event, entries in events:
        out += encoder.feed(event, entries)
        if encoder.awaiting:
            return out + encoder.pause()
    return out


async def _stream(chunks: list[Chunk]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield sse(chunk)
        await asyncio.sleep(0.002)  # a stream in pieces, as a run's is
    yield DONE


def _sse_response(chunks: list[Chunk]) -> Response:
    return StreamingResponse(_stream(chunks), headers=UI_MESSAGE_STREAM_HEADERS)


async def _chat(request: Request) -> Response:
    if request.headers.get("authorization") != f"Bearer {TOKEN}":
        return JSONResponse(error_body(GatewayError.unauthorized()), status_code=401)
    try:
        chat = parse_chat_request(json.loads(await request.body()))
    except GatewayError as err:
        return JSONResponse(error_body(err), status_code=err.status)
    before, after = approval_run(APPROVAL_REQUEST)
    if chat.approvals:  # the continuation of the waiting request, after the approval
        assert chat.message_id == APPROVAL_REQUEST and [a.call_id for a in chat.approvals] == [CALL_ID]
        origin = before[-1][0]
        assert origin.type == "trace"
        return _sse_response(_chunks(chat.message_id, [*before, *after], origin=origin.event.seq))
    scripts = {
        "answer": answer_run(chat.message_id),
        "approval": before,
        "fail": failed_run(chat.message_id),
    }
    request_id = APPROVAL_REQUEST if chat.ask == "approval" else chat.message_id
    return _sse_response(_chunks(request_id, scripts[chat.ask or "answer"]))


async def _resume(request: Request) -> Response:
    if request.path_params["chat"] != RUNNING_CHAT:
        return Response(status_code=204)
    return _sse_response(_chunks("req-running", answer_run("req-running")))


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def server() -> AsyncIterator[str]:
    """The scripted UI message stream server's chat URL."""
    app = Starlette(
        routes=[
            Route("/chat", _chat, methods=["POST"]),
            Route("/chat/{chat}/stream", _resume, methods=["GET"]),
        ]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    try:
        while not uv.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/chat"
    finally:
        uv.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        sock.close()


@pytest.fixture(scope="module")
def js_clients() -> Path:
    """tests/js with its node_modules installed from the lock file."""
    assert shutil.which("node"), "node (20 or newer) is needed for the JavaScript client tests"
    lock = JS / "package-lock.json"
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=JS, check=True, timeout=300)
    return JS


async def _client(folder: Path, **request: Any) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        "node",
        "aisdk_client.mjs",
        cwd=folder,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(json.dumps(request).encode()), 120)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


def _user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def _final(seen: dict[str, Any]) -> dict[str, Any]:
    assert seen["status"] == 200, seen
    assert seen["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert seen["headers"]["content-type"].startswith("text/event-stream")
    return seen["messages"][-1]


def _texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["parts"] if part["type"] == "text"]


async def test_the_sdk_folds_an_answer_into_one_assistant_message(server: str, js_clients: Path) -> None:
    seen = await _client(
        js_clients, url=server, token=TOKEN, chatId="chat-1", messages=[_user("answer", "u-1")]
    )
    message = _final(seen)
    assert message["id"] == "u-1"  # the request's id: the asking message's
    assert message["role"] == "assistant"
    assert [part["type"] for part in message["parts"]] == ["step-start", "text"]
    assert message["parts"][1] == {"type": "text", "text": "Hello from the AI SDK stream.", "state": "done"}
    assert seen["errors"] == []
    assert len(seen["messages"]) > 3  # folded as it streamed, not in one piece


async def test_an_approval_request_and_the_continuation_after_the_sdk_approves(
    server: str, js_clients: Path
) -> None:
    asked = [_user("approval", "u-2")]
    waiting = _final(await _client(js_clients, url=server, token=TOKEN, chatId="chat-2", messages=asked))
    assert waiting["id"] == APPROVAL_REQUEST
    tool = next(part for part in waiting["parts"] if part["type"] == "dynamic-tool")
    assert tool["state"] == "approval-requested"
    assert tool["toolCallId"] == CALL_ID and tool["toolName"] == "calculator"
    assert tool["input"] == {"expression": "17 * 23"}
    assert tool["approval"] == {"id": CALL_ID}
    assert _texts(waiting) == ["Let me compute that."]
    # What the SDK's addToolApprovalResponse leaves in the message, sent back as the next request.
    approved = {**tool, "state": "approval-responded", "approval": {"id": CALL_ID, "approved": True}}
    answered = {**waiting, "parts": [approved if p is tool else p for p in waiting["parts"]]}
    seen = await _client(
        js_clients,
        url=server,
        token=TOKEN,
        chatId="chat-2",
        messages=[*asked, answered],
        continueMessage=answered,
    )
    final = _final(seen)
    assert final["id"] == APPROVAL_REQUEST  # the same message, continued
    tools = [part for part in final["parts"] if part["type"] == "dynamic-tool"]
    assert len(tools) == 1
    assert tools[0]["state"] == "output-available" and tools[0]["output"] == "391"
    assert tools[0]["approval"] == {"id": CALL_ID, "approved": True}
    assert _texts(final) == ["Let me compute that.", "17 * 23 = 391."]


async def test_a_failed_request_reaches_the_sdk_as_an_error(server: str, js_clients: Path) -> None:
    seen = await _client(
        js_clients, url=server, token=TOKEN, chatId="chat-3", messages=[_user("fail", "u-3")]
    )
    message = _final(seen)
    assert seen["errors"] == ["timeout: the LLM call timed out"]
    assert _texts(message) == ["Half an"]
    assert message["metadata"] == {"error": {"code": "timeout"}}


async def test_junk_and_a_wrong_token_are_refused_by_name(server: str, js_clients: Path) -> None:
    junk = await _client(
        js_clients, url=server, token=TOKEN, chatId="bad id!", messages=[_user("answer", "u-4")]
    )
    assert junk["status"] == 400
    assert "invalid_input" in junk["failed"] and "thread id" in junk["failed"]
    wrong = await _client(
        js_clients, url=server, token="nope", chatId="chat-4", messages=[_user("answer", "u-5")]
    )
    assert wrong["status"] == 401 and "unauthorized" in wrong["failed"]


async def test_the_sdk_resume_route_replays_a_running_request_or_gets_204(
    server: str, js_clients: Path
) -> None:
    resumed = await _client(js_clients, url=server, token=TOKEN, chatId=RUNNING_CHAT, resume=True)
    message = _final(resumed)
    assert message["id"] == "req-running"
    assert _texts(message) == ["Hello from the AI SDK stream."]
    nothing = await _client(js_clients, url=server, token=TOKEN, chatId="chat-idle", resume=True)
    assert nothing == {"status": 204, "headers": nothing["headers"], "resumed": None}
