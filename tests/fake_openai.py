"""A tiny fake OpenAI chat-completions server on 127.0.0.1, for tests of the real litellm path.

It records every request (headers and JSON body) and answers from a queue of
replies (then with a default answer), so tests can check what litellm sent and
how the activity parses what came back, including HTTP errors with headers.
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


def error_body(
    message: str, error_type: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """An OpenAI error body."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class FakeOpenAI:
    """The server; use `async with FakeOpenAI() as server:` and point `api_base` at `server.base_url`."""

    def __init__(self, default: dict[str, Any] | None = None) -> None:
        self.requests: list[RecordedRequest] = []
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
    ) -> None:
        """Queue the next answer (answers are used once, in order), optionally after a delay."""
        self._replies.append(FakeReply(body, status, dict(headers or {}), delay_s))

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

    async def _handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body))
        reply = self._replies.popleft() if self._replies else FakeReply(self.default)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        return web.Response(
            status=reply.status,
            text=json.dumps(reply.body),
            content_type="application/json",
            headers=reply.headers,
        )
