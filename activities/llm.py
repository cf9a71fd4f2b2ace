"""The LLM activity: one chat completion through litellm, with provider errors classified.

litellm reads API keys from the worker's environment (`OPENAI_API_KEY`, ...);
nothing secret travels in `LLMRequest` or `LLMResponse`, so payloads in the
Temporal history and Web UI stay safe to show. litellm's own retries are off:
Temporal's retry policy is the one retry loop (see `activities.llm_errors`).
"""

from __future__ import annotations

import os

# litellm fetches its model cost map from the internet at import unless told not to.
# (`activities/__init__.py` sets this too, for the submodules that import litellm.)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
from typing import Any

import litellm
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities._heartbeat import with_heartbeat
from activities.llm_errors import classify
from activities.message_cache import MessageCache
from activities.scripted import MODEL as SCRIPTED_LITELLM_MODEL
from activities.scripted import register_scripted_provider, scripted_metadata
from activities.tool_registry import ToolRegistry
from contracts.activities import LLM_ACTIVITY
from contracts.errors import UNKNOWN_TOOL
from contracts.llm import SCRIPTED_MODEL, LLMRequest, LLMResponse, ToolSpec, Usage
from conversation import Message, ToolCall

# The worker logs errors itself; litellm's "Give Feedback / Get Help" banner is noise.
litellm.suppress_debug_info = True
register_scripted_provider()

# Keys the activity sets itself; `settings.extra` cannot override them.
_RESERVED = frozenset({"model", "messages", "tools", "num_retries", "timeout", "metadata", "stream"})


class LLMActivities:
    """The LLM activity, bound to the worker's tool registry and the message cache."""

    def __init__(self, registry: ToolRegistry, cache: MessageCache) -> None:
        """Serve tool specs from `registry`; resolve and cache messages with `cache`."""
        self._registry = registry
        self._cache = cache

    @activity.defn(name=LLM_ACTIVITY)
    async def llm_call(self, request: LLMRequest) -> LLMResponse:
        """Ask the model for the next step: a final answer and/or tool calls.

        Raises:
            ApplicationError: `message_cache_miss` (non-retryable: the run resends inline),
                `unknown_tool` (non-retryable), or the provider failed (`llm_errors.classify`
                decides whether Temporal retries it and after how long).
        """
        messages = await self._cache.resolve(request)
        tools = self._tool_specs(request.tools)
        kwargs = completion_kwargs(request, attempt=activity.info().attempt, messages=messages, tools=tools)
        try:
            response = await with_heartbeat(litellm.acompletion(**kwargs))
        except Exception as exc:
            raise classify(exc) from None
        parsed = parse_response(response, request)
        parsed.local_tools = sorted({c.name for c in parsed.tool_calls if self._registry.is_local(c.name)})
        answer = Message(
            role="assistant",
            content=parsed.content,
            tool_calls=list(parsed.tool_calls) or None,
            thinking=parsed.thinking,
        )
        await self._cache.remember(answer)
        return parsed

    def _tool_specs(self, names: list[str]) -> list[ToolSpec]:
        unknown = [name for name in names if name not in self._registry]
        if unknown:
            available = ", ".join(self._registry.names()) or "(none)"
            raise ApplicationError(
                f"unknown tool(s) {', '.join(repr(n) for n in unknown)}; available tools: {available}",
                type=UNKNOWN_TOOL,
                non_retryable=True,
            )
        return [self._registry.spec(name) for name in names]


def completion_kwargs(
    request: LLMRequest, *, attempt: int, messages: list[Message], tools: list[ToolSpec]
) -> dict[str, Any]:
    """The keyword arguments of `litellm.acompletion` for a request whose messages and tools are resolved."""
    kwargs: dict[str, Any] = {k: v for k, v in request.settings.extra.items() if k not in _RESERVED}
    settings = request.settings
    for key, value in (
        ("temperature", settings.temperature),
        ("max_tokens", settings.max_tokens),
        ("top_p", settings.top_p),
    ):
        if value is not None:
            kwargs[key] = value
    kwargs.update(
        model=request.model,
        messages=to_openai_messages(request.system_prompt, messages),
        num_retries=0,
        timeout=request.timeout_s,
    )
    if tools:
        kwargs["tools"] = to_openai_tools(tools)
    if request.model == SCRIPTED_MODEL:
        kwargs["model"] = SCRIPTED_LITELLM_MODEL
        kwargs["metadata"] = scripted_metadata(request.scripted, attempt)
    return kwargs


def to_openai_messages(system_prompt: str | None, messages: list[Message]) -> list[dict[str, Any]]:
    """OpenAI chat messages: the system prompt, then the context (without `thinking`)."""
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for message in messages:
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "name": message.name,
                    "content": message.content,
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    # OpenAI wants null, not "", next to tool calls.
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI function-tool definitions for the tool specs."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def parse_response(response: object, request: LLMRequest) -> LLMResponse:
    """The `LLMResponse` of a litellm chat completion (first choice).

    Tool-call arguments stay raw strings, even malformed: the workflow reports
    them back to the model instead of failing the call.
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
    thinking = getattr(message, "reasoning_content", None)
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
