"""The OpenAI chat format that litellm speaks: messages and tools out, a chat completion back in.

Plain data only: this module does not import litellm (`activities.llm._litellm` re-exports
its names and is the one module that does).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from activities.llm.llm_errors import classify
from contracts.llm import LLMRequest, LLMResponse, ToolSpec, Usage
from conversation import Message, ToolCall

Render = Callable[[Message], "str | list[dict[str, Any]]"]
"""A user message's content with its attachments (`activities.llm.attachment_parts`)."""


def openai_message(message: Message, render: Render | None = None) -> dict[str, Any]:
    """The OpenAI chat form of one message (`thinking` is never sent back).

    A user message with attachments takes its content from `render` (content parts).
    """
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
        # OpenAI wants null, not "", next to tool calls.
        return {"role": "assistant", "content": message.content or None, "tool_calls": calls}
    if render is not None and message.attachments:
        return {"role": message.role, "content": render(message)}
    return {"role": message.role, "content": message.content}


def to_openai_messages(
    system_prompt: str | None, messages: Sequence[Message], render: Render | None = None
) -> list[dict[str, Any]]:
    """OpenAI chat messages: the system prompt, then the context (attachments rendered by `render`)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    out.extend(openai_message(message, render) for message in messages)
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI function-tool definitions for the tool specs."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def parse_response(response: object, request: LLMRequest) -> LLMResponse:
    """The `LLMResponse` of a chat completion (first choice): litellm's, or the OpenAI SDK's.

    Tool-call arguments stay raw strings, even malformed: the workflow reports them
    back to the model instead of failing the call.

    Raises:
        ApplicationError: `provider_error` (retryable) when the response has no choices.
    """
    choices: list[Any] = list(getattr(response, "choices", None) or [])
    if not choices:
        raise classify(ValueError("the provider returned no choices"))
    choice = choices[0]
    message = choice.message
    tool_calls: list[ToolCall] = []
    for k, raw in enumerate(message.tool_calls or []):
        arguments = raw.function.arguments
        tool_calls.append(
            ToolCall(
                id=raw.id or f"call_{request.iteration}_{k}",
                name=raw.function.name or "",
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    # litellm names a server's reasoning `reasoning_content`; the OpenAI SDK keeps the server's own
    # field, which OpenAI-compatible servers call `reasoning_content` or `reasoning`.
    thinking = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    usage = getattr(response, "usage", None)
    return LLMResponse(
        content=message.content or "",
        tool_calls=tool_calls,
        thinking=thinking if isinstance(thinking, str) and thinking else None,
        finish_reason=choice.finish_reason,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            total_tokens=int(getattr(usage, "total_tokens", 0) or 0),
            llm_calls=1,
        ),
        response_id=getattr(response, "id", None),
        model=getattr(response, "model", None),
    )
