"""A chat completion assembled from its streamed chunks, each fragment handed to a delta sink on arrival.

Plain data, like `activities.llm._openai_format`: chunks are read by attribute, so litellm's
`ModelResponseStream` and the OpenAI SDK's `ChatCompletionChunk` both fit (servers name
reasoning `reasoning_content` or `reasoning`). `body` is the OpenAI `chat.completion`
the chunks add up to; each route turns it into the response type it returns unstreamed
and parses it with the same `parse_response`, so a streamed answer equals an unstreamed
one (content, tool calls, thinking, finish reason, ids, and usage when the provider
sends it: ask for it with `stream_options={"include_usage": True}`).

Two differences remain, both litellm's or the provider's: through `litellm.acompletion`
a streamed answer's `model` is the name requested, where an unstreamed one carries the
server's; and a tool call streamed without an id gets `""`, which `parse_response` names
as it names an unstreamed call without one (`call_<iteration>_<k>`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from activities.llm.delta_publisher import DeltaSink, Fragment
from contracts.stream import ToolCallDelta

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass(slots=True)
class _ToolCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list[str])


class StreamedCompletion:
    """The answer so far: fragments added (and passed to the sink) in order, plus the final chunk's facts."""

    def __init__(self, sink: DeltaSink) -> None:
        """Pass every non-empty fragment to `sink` as it is added."""
        self._sink = sink
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._tool_calls: dict[int, _ToolCall] = {}
        self.response_id: str | None = None
        self.model: str | None = None
        self.created = 0
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None

    def add(self, fragment: Fragment) -> None:
        """Add one fragment of the answer and pass it on."""
        if not (fragment.text or fragment.thinking or fragment.tool_calls):
            return
        if fragment.text:
            self._text.append(fragment.text)
        if fragment.thinking:
            self._thinking.append(fragment.thinking)
        for delta in fragment.tool_calls:
            call = self._tool_calls.setdefault(delta.index, _ToolCall())
            call.id = call.id or delta.id
            call.name = call.name or delta.name
            call.arguments.append(delta.arguments)
        self._sink(fragment)

    def add_chunk(self, chunk: object) -> None:
        """Add one streamed chunk (OpenAI form): its first choice's delta, finish reason, ids and usage."""
        self.response_id = self.response_id or _text_or_none(getattr(chunk, "id", None))
        self.model = self.model or _text_or_none(getattr(chunk, "model", None))
        created = getattr(chunk, "created", None)
        if isinstance(created, int) and not self.created:
            self.created = created
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            counts = {name: int(getattr(usage, name, 0) or 0) for name in _USAGE_FIELDS}
            if self.usage is None or any(counts.values()):
                self.usage = counts
        for choice in list(getattr(chunk, "choices", None) or []):
            if (getattr(choice, "index", 0) or 0) != 0:
                continue
            reason = getattr(choice, "finish_reason", None)
            if reason:
                self.finish_reason = str(reason)
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self.add(_fragment(delta))

    def body(self) -> dict[str, Any]:
        """The OpenAI `chat.completion` (one choice) the chunks add up to."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or "",
                    "type": "function",
                    "function": {"name": call.name or "", "arguments": "".join(call.arguments)},
                }
                for _index, call in sorted(self._tool_calls.items())
            ]
        if self._thinking:
            message["reasoning_content"] = "".join(self._thinking)
        body: dict[str, Any] = {
            "id": self.response_id or "",
            "object": "chat.completion",
            "created": self.created,
            "model": self.model or "",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason or "stop"}],
        }
        if self.usage is not None:
            body["usage"] = dict(self.usage)
        return body


def _fragment(delta: object) -> Fragment:
    thinking = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
    calls: list[ToolCallDelta] = []
    for k, raw in enumerate(list(getattr(delta, "tool_calls", None) or [])):
        index = getattr(raw, "index", None)
        function = getattr(raw, "function", None)
        arguments = getattr(function, "arguments", None) or ""
        calls.append(
            ToolCallDelta(
                index=index if isinstance(index, int) else k,
                id=_text_or_none(getattr(raw, "id", None)),
                name=_text_or_none(getattr(function, "name", None)),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    return Fragment(
        text=_text_or_none(getattr(delta, "content", None)) or "",
        thinking=thinking if isinstance(thinking, str) else "",
        tool_calls=calls,
    )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
