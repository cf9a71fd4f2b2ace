"""The scripted model's answers as OpenAI chat completions, whole or in pieces: for both of its routes.

`activities.llm.models.scripted` answers an ordinary turn with them, without litellm;
`activities.llm.models._scripted_provider` (litellm's custom provider `scripted`) uses them too.
"""

from __future__ import annotations

import asyncio
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
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if turn.thinking is not None:
        message["reasoning_content"] = turn.thinking
    prompt_tokens = _rough_tokens(json.dumps(messages, default=str))
    completion_tokens = _rough_tokens((turn.content or "") + (turn.thinking or "") + json.dumps(tool_calls))
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
