"""The scripted model's answers as OpenAI chat completions, whole or in pieces: for both of its routes.

`activities.llm.models.scripted` answers an ordinary turn with them, without litellm;
`activities.llm.models._scripted_provider` (litellm's custom provider `scripted`) uses them too.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import Fragment
from contracts.agent import ScriptTurn
from contracts.llm import SCRIPTED_MODEL
from contracts.stream import ToolCallDelta

PROVIDER = SCRIPTED_MODEL
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


async def send(sent: list[Fragment], turn: ScriptTurn, completion: StreamedCompletion) -> None:
    """Add each piece to `completion` (which passes it to its sink), `chunk_delay_s` before each."""
    for piece in sent:
        if turn.chunk_delay_s > 0:
            await asyncio.sleep(turn.chunk_delay_s)
        completion.add(piece)


def finished(completion: StreamedCompletion, whole: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the pieces add up to, with the last chunk's facts (as a provider sends them)."""
    completion.response_id, completion.model = whole["id"], whole["model"]
    completion.created = whole["created"]
    completion.finish_reason = whole["choices"][0]["finish_reason"]
    completion.usage = {name: int(whole["usage"][name]) for name in USAGE_FIELDS}
    return completion.body()


def pieces(message: dict[str, Any], size: int) -> Iterator[Fragment]:
    """The message's thinking, content and tool calls, in pieces of `size` characters."""
    thinking: str = message.get("reasoning_content") or ""
    for start in range(0, len(thinking), size):
        yield Fragment(thinking=thinking[start : start + size])
    content: str = message.get("content") or ""
    for start in range(0, len(content), size):
        yield Fragment(text=content[start : start + size])
    for k, raw in enumerate(message.get("tool_calls") or []):
        function = raw["function"]
        arguments: str = function["arguments"] or ""
        yield Fragment(
            tool_calls=[
                ToolCallDelta(index=k, id=raw["id"], name=function["name"], arguments=arguments[:size])
            ]
        )
        for start in range(size, len(arguments), size):
            yield Fragment(tool_calls=[ToolCallDelta(index=k, arguments=arguments[start : start + size])])


def response_body(turn: ScriptTurn, index: int, messages: list[Any]) -> dict[str, Any]:
    """The turn's answer as an OpenAI chat completion (one choice), its usage roughly counted."""
    tool_calls = [
        {
            "id": tool_call.id or f"call_{index}_{k}",
            "type": "function",
            "function": {
                "name": tool_call.name,
                "arguments": tool_call.arguments
                if isinstance(tool_call.arguments, str)
                else json.dumps(tool_call.arguments),
            },
        }
        for k, tool_call in enumerate(turn.tool_calls)
    ]
    content = json.dumps(describe_messages(messages)) if turn.describe_input else turn.content
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if turn.thinking is not None:
        message["reasoning_content"] = turn.thinking
    prompt_tokens = _rough_tokens(json.dumps(messages, default=str))
    completion_tokens = _rough_tokens((content or "") + (turn.thinking or "") + json.dumps(tool_calls))
    return {
        "id": f"scripted-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": PROVIDER,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": turn.finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _rough_tokens(text: str) -> int:
    """About four characters per token: enough for usage accounting in tests."""
    return (len(text) + 3) // 4


def describe_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """What a `describe_input` turn answers: each message's role and parts, as the call received them.

    A part is `{"kind": "text", "text": ...}`, or for an `image_url` / `file` part
    `{"kind": "image" | "file", "media_type", "bytes", "sha256", "name"}` (the data URL
    decoded: `bytes` is the decoded length, `sha256` the decoded bytes' digest; `name` a
    file part's `filename`, None for an image).
    """
    described: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        raw: list[Any] = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]  # pyright: ignore[reportUnknownVariableType]
        described.append({"role": message.get("role"), "parts": [_described_part(part) for part in raw]})
    return described


def _described_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "image_url":
        return {"kind": "image", **_described_url(str(part["image_url"]["url"])), "name": None}
    if kind == "file":
        file = part["file"]
        return {
            "kind": "file",
            **_described_url(str(file.get("file_data") or "")),
            "name": file.get("filename"),
        }
    return {"kind": "text", "text": part.get("text")}


def _described_url(url: str) -> dict[str, Any]:
    """The media type, length and sha256 of a base64 data URL's bytes (nulls for anything else)."""
    header, _, data = url.partition(",")
    if not header.startswith("data:") or not header.endswith(";base64"):
        return {"media_type": None, "bytes": None, "sha256": None}
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return {"media_type": header[5:-7], "bytes": None, "sha256": None}
    return {"media_type": header[5:-7], "bytes": len(decoded), "sha256": hashlib.sha256(decoded).hexdigest()}
