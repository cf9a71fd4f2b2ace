"""The scripted model: answers from the agent's script, like a provider through litellm.

Users test their agents with it (no API key, deterministic answers, injected
delays and provider errors). `answer` builds a litellm `ModelResponse` or raises the
exception a provider raises through litellm, so its answers go through the same
parsing and its errors through the same classification (`activities.llm_errors`) as
OpenAI's. The LLM activity calls it through `complete`, without litellm's request
pipeline (routing, logging, cost accounting: nothing to do for a model that lives in
the worker), so the scripted benchmark scenario measures no litellm call at all (the
provider-path scenario does). A streamed call (`stream_answer`) sends the turn in
pieces to a delta sink and assembles its answer from them, as the provider routes do.
The same handler is registered as the litellm custom provider `scripted` (model
`scripted/scripted`, by `register_scripted_provider`, which the LLM activities run when
they load litellm) for code that calls `litellm.acompletion` itself, passing the
`ScriptedCall` and the attempt in `acompletion(metadata=...)` (that provider does not
stream). litellm's types come through `activities._litellm`, the one module that imports litellm.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx

from activities._litellm import (
    ATTEMPT_KEY,
    SCRIPTED_CALL_KEY,
    SCRIPTED_PROVIDER,
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    CustomLLM,
    InternalServerError,
    ModelResponse,
    RateLimitError,
    Timeout,
    classify_error,
    litellm,
    parse_response,
    to_openai_messages,
)
from activities._streamed_completion import StreamedCompletion
from activities.delta_publisher import DeltaSink, Fragment
from contracts.agent import ScriptTurn
from contracts.errors import BAD_REQUEST, SCRIPT_EXHAUSTED
from contracts.llm import SCRIPTED_MODEL, LLMRequest, LLMResponse, ScriptedCall
from contracts.stream import ToolCallDelta
from conversation import Message

PROVIDER = SCRIPTED_PROVIDER
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


class ScriptError(BadRequestError):
    """The script cannot answer this call (past its end, or no script sent).

    A `BadRequestError` (400) so that litellm passes it through unchanged and
    `classify` makes it non-retryable: retrying cannot make the script longer.
    `error_code` is the `ApplicationError.type` it becomes.
    """

    def __init__(self, message: str, error_code: str) -> None:
        super().__init__(message, model=PROVIDER, llm_provider=PROVIDER)  # pyright: ignore[reportUnknownMemberType]
        self.error_code = error_code


class ScriptedLLM(CustomLLM):
    """litellm provider `scripted`: one `ScriptTurn` per call, in order."""

    async def acompletion(  # noqa: D102 - documented on the class; signature fixed by litellm
        self,
        model: str,
        messages: list[Any],
        api_base: Any,
        custom_prompt_dict: Any,
        model_response: Any,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: Any,
        acompletion: Any = None,
        litellm_params: Any = None,
        logger_fn: Any = None,
        headers: Any = None,
        timeout: Any = None,  # noqa: ASYNC109 - litellm's signature
        client: Any = None,
    ) -> ModelResponse:
        params: dict[str, Any] = litellm_params or {}
        metadata: dict[str, Any] = params.get("metadata") or {}
        raw_call = metadata.get(SCRIPTED_CALL_KEY)
        call = ScriptedCall.model_validate(raw_call) if raw_call is not None else None
        return await answer(call, int(metadata.get(ATTEMPT_KEY) or 1), messages)


async def complete(request: LLMRequest, attempt: int, sink: DeltaSink | None = None) -> LLMResponse:
    """The scripted model's answer to `request` (every message inline), parsed and classified as litellm's.

    With a `sink`, the answer streams (`stream_answer`).

    Raises:
        ApplicationError: the turn's injected provider error, or the script cannot answer.
    """
    messages = to_openai_messages(
        request.system_prompt, [m for m in request.messages if isinstance(m, Message)]
    )
    try:
        if sink is None:
            response = await answer(request.scripted, attempt, messages)
        else:
            response = await stream_answer(request.scripted, attempt, messages, sink)
    except Exception as exc:
        raise classify_error(exc) from None
    return parse_response(response, request)


def warm_up_request() -> LLMRequest:
    """A one-turn scripted request: a call that needs no key and no network."""
    turn = ScriptTurn(content="ready")
    return LLMRequest(
        model=SCRIPTED_MODEL,
        messages=[Message(role="user", content="warm-up")],
        iteration=0,
        scripted=ScriptedCall(index=0, length=1, turn=turn),
    )


async def answer(call: ScriptedCall | None, attempt: int, messages: list[Any]) -> ModelResponse:
    """The scripted model's answer to one call (attempt `attempt`; `messages` in OpenAI form, for usage).

    Raises:
        ScriptError: no script, or the call is past its end (non-retryable).
        Exception: the litellm exception of the turn's injected provider error.
    """
    turn, index = _turn(call)
    if turn.delay_s > 0:
        await asyncio.sleep(turn.delay_s)
    if turn.error is not None and attempt <= turn.error_times:
        raise _provider_error(turn, index, attempt)
    return _response(turn, index, messages)


async def stream_answer(
    call: ScriptedCall | None, attempt: int, messages: list[Any], sink: DeltaSink
) -> ModelResponse:
    """`answer`, streamed: the same answer, assembled from the pieces it sends to `sink`.

    After `delay_s`, the turn's thinking, then its content, then each tool call (its id
    and name with the first piece of its arguments) go out in pieces of `chunk_chars`
    characters, `chunk_delay_s` before each piece. An attempt that fails (`error`) sends
    the first half of its pieces (rounded down), then raises: a client sees the deltas
    of a failed attempt, as with a provider whose stream breaks off.

    Raises:
        ScriptError: as `answer`.
        Exception: the litellm exception of the turn's injected provider error.
    """
    turn, index = _turn(call)
    if turn.delay_s > 0:
        await asyncio.sleep(turn.delay_s)
    whole = _response(turn, index, messages)
    pieces = list(_pieces(whole.choices[0].message, turn.chunk_chars))  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
    failing = turn.error is not None and attempt <= turn.error_times
    completion = StreamedCompletion(sink)
    for piece in pieces[: len(pieces) // 2] if failing else pieces:
        if turn.chunk_delay_s > 0:
            await asyncio.sleep(turn.chunk_delay_s)
        completion.add(piece)
    if failing:
        raise _provider_error(turn, index, attempt)
    # The last chunk's facts, as a provider sends them.
    completion.response_id, completion.model, completion.created = whole.id, whole.model, whole.created
    completion.finish_reason = whole.choices[0].finish_reason
    usage: Any = getattr(whole, "usage", None)
    completion.usage = {name: int(getattr(usage, name, 0) or 0) for name in _USAGE_FIELDS}
    return ModelResponse(**completion.body())


def _turn(call: ScriptedCall | None) -> tuple[ScriptTurn, int]:
    """The turn that answers `call`, and its index in the script.

    Raises:
        ScriptError: no script, or the call is past its end (non-retryable).
    """
    if call is None:
        raise ScriptError(
            "scripted model: the request carries no script (LLMRequest.scripted is unset)", BAD_REQUEST
        )
    if call.turn is None:
        raise ScriptError(
            f"scripted model: call {call.index + 1} is past the end of the script ({call.length} turns)",
            SCRIPT_EXHAUSTED,
        )
    return call.turn, call.index


def _pieces(message: Any, size: int) -> Iterator[Fragment]:
    """The message's thinking, content and tool calls, in pieces of `size` characters."""
    thinking: str = getattr(message, "reasoning_content", None) or ""
    for start in range(0, len(thinking), size):
        yield Fragment(thinking=thinking[start : start + size])
    content: str = message.content or ""
    for start in range(0, len(content), size):
        yield Fragment(text=content[start : start + size])
    for k, raw in enumerate(getattr(message, "tool_calls", None) or []):
        arguments: str = raw.function.arguments or ""
        yield Fragment(
            tool_calls=[ToolCallDelta(index=k, id=raw.id, name=raw.function.name, arguments=arguments[:size])]
        )
        for start in range(size, len(arguments), size):
            yield Fragment(tool_calls=[ToolCallDelta(index=k, arguments=arguments[start : start + size])])


def _provider_error(turn: ScriptTurn, index: int, attempt: int) -> Exception:
    """The exception a real provider (through litellm) raises for the turn's error kind."""
    what = f"scripted {turn.error} error on call {index + 1}, attempt {attempt} of {turn.error_times}"
    request = httpx.Request("POST", "https://scripted.invalid/v1/chat/completions")
    if turn.error == "rate_limit":
        response = httpx.Response(429, headers={"retry-after": "1"}, request=request)
        return RateLimitError(what, llm_provider=PROVIDER, model=PROVIDER, response=response)
    if turn.error == "timeout":
        return Timeout(what, model=PROVIDER, llm_provider=PROVIDER)
    if turn.error == "auth":
        response = httpx.Response(401, request=request)
        return AuthenticationError(what, llm_provider=PROVIDER, model=PROVIDER, response=response)
    if turn.error == "context_window":
        return ContextWindowExceededError(what, model=PROVIDER, llm_provider=PROVIDER)
    return InternalServerError(what, llm_provider=PROVIDER, model=PROVIDER)


def _response(turn: ScriptTurn, index: int, messages: list[Any]) -> ModelResponse:
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
    return ModelResponse(
        id=f"scripted-{index}",
        model=PROVIDER,
        choices=[
            {
                "index": 0,
                "message": message,
                "finish_reason": turn.finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    )


def _rough_tokens(text: str) -> int:
    """About four characters per token: enough for usage accounting in tests."""
    return (len(text) + 3) // 4


_HANDLER = ScriptedLLM()


def register_scripted_provider() -> None:
    """Register the `scripted` provider with litellm (idempotent: safe to call many times)."""
    providers = list(litellm.custom_provider_map)
    if any(entry["provider"] == PROVIDER for entry in providers):
        return
    providers.append({"provider": PROVIDER, "custom_handler": _HANDLER})
    litellm.custom_provider_map = providers
