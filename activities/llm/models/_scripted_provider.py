"""The scripted model through litellm's types: its errors, and the litellm custom provider `scripted`.

`activities.llm.models.scripted` answers an ordinary turn without litellm. A turn it cannot answer
plainly comes here (litellm loaded first, off the event loop): the turn's injected provider
error (a litellm exception, so `activities.llm.llm_errors` classifies it as a provider's), a call
past the script's end, or a finish reason litellm maps. The same handler is registered as the
litellm custom provider `scripted` (model `scripted/scripted`, by `register_scripted_provider`,
which the LLM activities run when they load litellm) for code that calls `litellm.acompletion`
itself, passing the `ScriptedCall` and the attempt in `acompletion(metadata=...)` (that
provider does not stream).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from activities.llm._litellm import (
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
)
from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import DeltaSink
from activities.llm.models._scripted_turns import finished, pieces, response_body, send
from contracts.agent import ScriptTurn
from contracts.errors import BAD_REQUEST, SCRIPT_EXHAUSTED
from contracts.llm import LLMRequest, LLMResponse, ScriptedCall

PROVIDER = SCRIPTED_PROVIDER


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

    async def acompletion(
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


async def complete(
    request: LLMRequest, attempt: int, messages: list[Any], sink: DeltaSink | None = None
) -> LLMResponse:
    """The scripted answer as litellm's (`messages` in OpenAI form), its errors classified as a provider's.

    Raises:
        ApplicationError: the turn's injected provider error, or the script cannot answer.
    """
    try:
        if sink is None:
            response = await answer(request.scripted, attempt, messages)
        else:
            response = await stream_answer(request.scripted, attempt, messages, sink)
    except Exception as exc:
        raise classify_error(exc) from None
    return parse_response(response, request)


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
    return ModelResponse(**response_body(turn, index, messages))


async def stream_answer(
    call: ScriptedCall | None, attempt: int, messages: list[Any], sink: DeltaSink
) -> ModelResponse:
    """`answer`, streamed: the same answer, assembled from the pieces it sends to `sink`.

    An attempt that fails (`error`) sends the first half of its pieces (rounded down), then
    raises: a client sees the deltas of a failed attempt, as with a provider whose stream breaks off.

    Raises:
        ScriptError: as `answer`.
        Exception: the litellm exception of the turn's injected provider error.
    """
    turn, index = _turn(call)
    if turn.delay_s > 0:
        await asyncio.sleep(turn.delay_s)
    whole = response_body(turn, index, messages)
    sent = list(pieces(whole["choices"][0]["message"], turn.chunk_chars))
    failing = turn.error is not None and attempt <= turn.error_times
    completion = StreamedCompletion(sink)
    await send(sent[: len(sent) // 2] if failing else sent, turn, completion)
    if failing:
        raise _provider_error(turn, index, attempt)
    return ModelResponse(**finished(completion, whole))


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


_HANDLER = ScriptedLLM()


def register_scripted_provider() -> None:
    """Register the `scripted` provider with litellm (idempotent: safe to call many times)."""
    providers = list(litellm.custom_provider_map)
    if any(entry["provider"] == PROVIDER for entry in providers):
        return
    providers.append({"provider": PROVIDER, "custom_handler": _HANDLER})
    litellm.custom_provider_map = providers
