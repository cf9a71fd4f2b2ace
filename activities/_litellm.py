"""The one door to litellm: the only module that imports it, configures it and speaks its wire format.

Importing this module imports litellm (seconds of CPU), so nothing on the worker's
start-up path imports it: the LLM activities load it on first use, in a thread
(`activities.llm.load_litellm`), and the worker warms it in the background once it
polls. Configuration happens once, on first use (`configure`):

* no network at import or call time: litellm's model cost map and Anthropic beta-header
  config come from the copies bundled with it, Hugging Face tokenizers are never
  downloaded (token counts fall back to tiktoken's bundled encoding);
* no "Give Feedback / Get Help" banner; litellm logs through the application's handlers
  (where the worker redacts secrets), at WARNING unless `LITELLM_LOG` says otherwise;
* a zero-cost price for the `scripted` test provider (`activities.scripted` registers
  the provider itself).

It speaks the OpenAI chat format (messages, tools and responses, defined in
`activities._openai_format` and re-exported here; the scripted provider's metadata) used
by the LLM activity, `summarize` and exact token counting, and turns every litellm
failure into the project's error vocabulary (`activities.llm_errors`). Which route a
call takes (litellm's `acompletion`, or its OpenAI provider called directly) is
`activities._provider`'s decision; the scripted model is `activities.scripted`.
"""

# ruff: noqa: E402 - litellm reads the environment variables set below when it is imported.
from __future__ import annotations

import os

# Before litellm is imported: each of these makes litellm use its bundled copy instead of
# fetching one from GitHub (at import for the cost map, at the first Anthropic call for
# the beta headers, in proxy features for the rest).
for _variable in (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS",
    "LITELLM_LOCAL_POLICY_TEMPLATES",
    "LITELLM_LOCAL_BLOG_POSTS",
):
    os.environ.setdefault(_variable, "True")

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import litellm
from litellm.exceptions import (
    AuthenticationError,
    BadRequestError,
    ContentPolicyViolationError,
    ContextWindowExceededError,
    InternalServerError,
    RateLimitError,
    Timeout,
)
from litellm.litellm_core_utils.core_helpers import (  # pyright: ignore[reportMissingTypeStubs]
    map_finish_reason,
)
from litellm.llms.custom_llm import CustomLLM
from litellm.llms.openai.common_utils import OpenAIError  # pyright: ignore[reportMissingTypeStubs]
from litellm.types.utils import ModelResponse  # pyright: ignore[reportMissingTypeStubs]
from temporalio.exceptions import ApplicationError

from activities._openai_format import openai_message, parse_response, to_openai_messages, to_openai_tools
from activities._streamed_completion import StreamedCompletion
from activities.delta_publisher import DeltaSink
from activities.llm_errors import classify
from activities.output_parsing import response_format
from contracts.errors import CONTENT_POLICY, CONTEXT_WINDOW_EXCEEDED
from contracts.llm import SCRIPTED_MODEL, LLMRequest, ScriptedCall, ToolSpec, Usage
from conversation import ContextPolicy, Message
from conversation.budget import estimate_tokens

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ContextWindowExceededError",
    "CustomLLM",
    "InternalServerError",
    "ModelResponse",
    "RateLimitError",
    "Timeout",
    "acompletion",
    "acompletion_stream",
    "classify_error",
    "completion_kwargs",
    "configure",
    "is_configured",
    "litellm",
    "map_finish_reason",
    "map_openai_error",
    "openai_message",
    "parse_response",
    "policy_for_model",
    "priced",
    "to_openai_messages",
    "to_openai_tools",
    "token_counts",
]

SCRIPTED_PROVIDER = "scripted"
SCRIPTED_LITELLM_MODEL = f"{SCRIPTED_PROVIDER}/{SCRIPTED_PROVIDER}"
STREAM_OPTIONS = {"include_usage": True}
"""Asked of every streamed call: the provider's usage in the last chunk (litellm never rejects it)."""
SCRIPTED_CALL_KEY = "scripted_call"
ATTEMPT_KEY = "attempt"
RESERVE_WINDOW_FRACTION = 4
"""`policy_for_model` reserves at most a quarter of the window for the answer."""

# Keys the activity sets itself; `settings.extra` cannot override them.
_RESERVED = frozenset({"model", "messages", "tools", "num_retries", "timeout", "metadata", "stream"})
# litellm classes whose meaning no status code carries (both are 400s).
_LITELLM_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (ContextWindowExceededError, CONTEXT_WINDOW_EXCEEDED),
    (ContentPolicyViolationError, CONTENT_POLICY),
)
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_SCRIPTED_PRICE = {
    "litellm_provider": SCRIPTED_PROVIDER,
    "mode": "chat",
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "cache_creation_input_token_cost": 0.0,
    "cache_read_input_token_cost": 0.0,
}

_configure_lock = threading.Lock()
_configured = False


def configure() -> None:
    """Configure litellm for the worker, once (thread-safe; later calls return at once)."""
    global _configured
    if _configured:
        return
    with _configure_lock:
        if _configured:
            return
        litellm.suppress_debug_info = True
        litellm.disable_hf_tokenizer_download = True
        # A zero-cost price entry: without one, litellm searches its whole model map for a
        # price after every scripted call (about a quarter of the call's CPU) and finds none.
        litellm.register_model({SCRIPTED_LITELLM_MODEL: _SCRIPTED_PRICE})  # pyright: ignore[reportUnknownMemberType]
        level = logging.getLevelNamesMapping().get(os.environ.get("LITELLM_LOG", "").upper(), logging.WARNING)
        for name in _LITELLM_LOGGERS:
            logger = logging.getLogger(name)
            # litellm's own handler printed every record a second time, unredacted by ours: its
            # records now reach the application's handlers (and their redaction) once, and
            # not a line per call at INFO.
            logger.handlers.clear()
            logger.setLevel(level)
        _configured = True


def is_configured() -> bool:
    """Whether `configure` has run (the door is ready for calls)."""
    return _configured


def classify_error(exc: BaseException) -> ApplicationError:
    """The project's `ApplicationError` for a litellm (or provider) failure; see `llm_errors`."""
    return classify(exc, _LITELLM_CODES)


async def acompletion(kwargs: dict[str, Any]) -> object:
    """`litellm.acompletion(**kwargs)`: litellm's whole call path, for any provider.

    Raises:
        ApplicationError: The provider failed, classified and redacted. The provider's
            exception is not chained: Temporal would write its text into history.
    """
    configure()
    try:
        return await litellm.acompletion(**kwargs)
    except Exception as exc:
        raise classify_error(exc) from None


async def acompletion_stream(kwargs: dict[str, Any], sink: DeltaSink) -> ModelResponse:
    """`acompletion` streamed: each fragment goes to `sink` as it arrives; returns the whole answer.

    Raises:
        ApplicationError: as `acompletion`, also when the stream breaks off.
    """
    configure()
    completion = StreamedCompletion(sink)
    chunks: Any = None
    try:
        chunks = await litellm.acompletion(**{**kwargs, "stream": True, "stream_options": STREAM_OPTIONS})
        async for chunk in chunks:
            completion.add_chunk(chunk)
    except Exception as exc:
        raise classify_error(exc) from None
    finally:
        if chunks is not None and hasattr(chunks, "aclose"):
            await chunks.aclose()  # at once when the call is cancelled, not when collected
    return ModelResponse(**completion.body())


def map_openai_error(exc: Exception, model: str, provider: str) -> Exception:
    """The litellm exception its `provider` route raises for an OpenAI SDK failure `exc`.

    The same mapping as inside `litellm.acompletion` (its OpenAI provider wraps the SDK's
    error in `OpenAIError`, then `exception_type` names it: `ContextWindowExceededError`,
    `RateLimitError` with the response's headers, ...), so both routes classify alike.
    """
    wrapped = OpenAIError(
        status_code=getattr(exc, "status_code", 500),
        message=getattr(exc, "message", str(exc)),
        headers=getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None),
        body=getattr(exc, "body", None),
    )
    try:
        litellm.exception_type(  # pyright: ignore[reportUnknownMemberType]
            model=model, custom_llm_provider=provider, original_exception=wrapped
        )
    except Exception as mapped:  # exception_type raises the mapped exception
        return mapped
    return wrapped


def completion_kwargs(request: LLMRequest, *, attempt: int, tools: Sequence[ToolSpec] = ()) -> dict[str, Any]:
    """The keyword arguments of `litellm.acompletion` for a request (litellm's own retries off).

    Raises:
        ValueError: the request still refers to messages (the activity resolves them first).
    """
    messages = [m for m in request.messages if isinstance(m, Message)]
    if request.prefix is not None or len(messages) != len(request.messages):
        raise ValueError("completion_kwargs needs every message inline; resolve references first")
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
    output = request.output  # native structured output; `settings.extra`'s own response_format wins
    native = output is not None and output.native and "response_format" not in kwargs
    if output is not None and native and native_schema(request.model):
        kwargs["response_format"] = response_format(output)
    if request.model == SCRIPTED_MODEL:
        kwargs["model"] = SCRIPTED_LITELLM_MODEL
        kwargs["metadata"] = scripted_metadata(request.scripted, attempt)
    return kwargs


@functools.lru_cache(maxsize=256)
def native_schema(model: str) -> bool:
    """Whether litellm's model map says `model` takes a JSON Schema `response_format` (never scripted)."""
    if model == SCRIPTED_MODEL:
        return False
    configure()
    try:
        return bool(litellm.supports_response_schema(model=model))  # pyright: ignore[reportUnknownMemberType]
    except Exception:  # an unmapped model: no native structured output
        return False


@functools.lru_cache(maxsize=256)
def _has_price(model: str) -> bool:
    if model == SCRIPTED_MODEL:
        return False
    configure()
    try:
        info = litellm.get_model_info(model=model)  # pyright: ignore[reportUnknownMemberType]
    except Exception:  # an unmapped model (a local server's, a new one): no price
        return False
    # A zero price is how litellm's map lists local servers' models (ollama/...): unknown, not free.
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


def priced(model: str, usage: Usage) -> Usage:
    """One call's `usage` with its cost from litellm's bundled prices; `unpriced_calls=1` without a price."""
    if _has_price(model):
        try:
            cost = litellm.cost_per_token(  # pyright: ignore[reportUnknownMemberType, reportPrivateImportUsage]
                model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
            )
            return usage.model_copy(update={"cost_usd": float(cost[0]) + float(cost[1])})
        except Exception:  # a price litellm cannot apply: reported as unpriced, never a failed call
            pass
    return usage.model_copy(update={"cost_usd": 0.0, "unpriced_calls": 1})


def scripted_metadata(call: ScriptedCall | None, attempt: int) -> dict[str, Any]:
    """The `metadata` the scripted provider reads (as `litellm_params["metadata"]`)."""
    return {
        SCRIPTED_CALL_KEY: call.model_dump(mode="json") if call is not None else None,
        ATTEMPT_KEY: attempt,
    }


def token_counts(model: str, messages: Sequence[Message]) -> list[int]:
    """Tokens of each message with `model`'s own tokenizer, for `token_estimator == "exact"`.

    Blocking (tokenizers load files): run it in a thread. A message litellm cannot
    count falls back to the heuristic, so one odd message never fails the call.
    """
    configure()
    counter = cast(Callable[..., int], litellm.token_counter)  # pyright: ignore[reportUnknownMemberType]
    counts: list[int] = []
    for message in messages:
        try:
            counts.append(int(counter(model=model, messages=[openai_message(message)])))
        except Exception:  # any tokenizer failure: estimate instead
            counts.append(estimate_tokens(message))
    return counts


def policy_for_model(model: str) -> ContextPolicy:
    """A context policy sized to `model`'s real context window, from litellm's bundled model map.

    The reserve is the model's maximum output, capped at a quarter of the window (some
    maps list output limits as large as the window). Unknown models, which litellm
    rejects, get the default policy: a small budget is the safe guess. Reads local data
    only; not for workflow code (call it in a client or an activity).
    """
    configure()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises several types for unmapped models
        return ContextPolicy()
    window = info.get("max_input_tokens")
    if not isinstance(window, int) or window <= 1:
        return ContextPolicy()
    cap = window // RESERVE_WINDOW_FRACTION
    max_output = info.get("max_output_tokens")
    reserve = min(max_output, cap) if isinstance(max_output, int) and max_output > 0 else cap
    return ContextPolicy(max_input_tokens=window, reserve_output_tokens=reserve)
