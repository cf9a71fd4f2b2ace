"""A tiny fake OpenAI chat-completions server on 127.0.0.1, for tests of the real litellm path.

It records every request (headers and JSON body) and answers from a queue of
replies (then with a default answer), so tests can check what litellm sent and
how the activity parses what came back, including HTTP errors with headers. A
request with `stream: true` gets its (successful) answer as OpenAI's server-sent
events: the completion cut into chunks by `stream_chunks`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web


@dataclass
class RecordedRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeReply:
    """One queued answer: a status, a JSON body, extra headers, and how long to wait first."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict[str, str])
    delay_s: float = 0.0
    chunk_chars: int = 4
    chunk_delay_s: float = 0.0


def tool_call(name: str, arguments: str, call_id: str = "call_fake_0") -> dict[str, Any]:
    """An OpenAI tool call; `arguments` is the raw JSON text."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    model: str = "gpt-4o-mini",
    finish_reason: str | None = None,
    response_id: str = "chatcmpl-fake",
) -> dict[str, Any]:
    """An OpenAI chat completion body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def stream_chunks(
    body: dict[str, Any], chunk_chars: int = 4, *, include_usage: bool = False
) -> list[dict[str, Any]]:
    """The `chat.completion.chunk`s OpenAI streams for `body`: reasoning, text, tool calls, finish, usage."""
    choice = body["choices"][0]
    message: dict[str, Any] = choice["message"]
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    def pieces(text: str) -> list[str]:
        return [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [
        chunk({"reasoning_content": piece}) for piece in pieces(message.get("reasoning_content") or "")
    ]
    chunks += [chunk({"content": piece}) for piece in pieces(message.get("content") or "")]
    for k, call in enumerate(message.get("tool_calls") or []):
        function = {"name": call["function"]["name"], "arguments": ""}
        head = {"index": k, "id": call["id"], "type": "function", "function": function}
        chunks.append(chunk({"tool_calls": [head]}))
        chunks += [
            chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
            for piece in pieces(call["function"]["arguments"])
        ]
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append(base | {"choices": [], "usage": body["usage"]})
    return chunks


def error_body(
    message: str, error_type: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """An OpenAI error body."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class FakeOpenAI:
    """The server; use `async with FakeOpenAI() as server:` and point `api_base` at `server.base_url`."""

    def __init__(self, default: dict[str, Any] | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self.stream_cut = asyncio.Event()
        """Set once the client has hung up on a streamed answer before its end."""
        self.default = default or chat_completion("ok")
        self._replies: deque[FakeReply] = deque()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        self._port = 0

    def reply(
        self,
        body: dict[str, Any],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        chunk_chars: int = 4,
        chunk_delay_s: float = 0.0,
    ) -> None:
        """Queue the next answer (answers are used once, in order), optionally after a delay.

        Streamed, it goes out in pieces of `chunk_chars` characters, `chunk_delay_s` apart.
        """
        self._replies.append(
            FakeReply(body, status, dict(headers or {}), delay_s, chunk_chars, chunk_delay_s)
        )

    @property
    def base_url(self) -> str:
        """The `api_base` for litellm, e.g. `http://127.0.0.1:54321/v1`."""
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        address: Any = self._runner.addresses[0]
        self._port = int(address[1])

    async def close(self) -> None:
        """Stop listening."""
        await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body))
        reply = self._replies.popleft() if self._replies else FakeReply(self.default)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if body.get("stream") and reply.status == 200:
            options: dict[str, Any] = body.get("stream_options") or {}
            return await self._stream(request, reply, bool(options.get("include_usage")))
        return web.Response(
            status=reply.status,
            text=json.dumps(reply.body),
            content_type="application/json",
            headers=reply.headers,
        )

    async def _stream(
        self, request: web.Request, reply: FakeReply, include_usage: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await response.prepare(request)
        try:
            for chunk in stream_chunks(reply.body, reply.chunk_chars, include_usage=include_usage):
                if reply.chunk_delay_s:
                    await asyncio.sleep(reply.chunk_delay_s)
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionError:
            self.stream_cut.set()
        return response
