"""One chat completion with a real provider, by one of two routes through litellm.

* **litellm's OpenAI provider, called directly** (`openai/...` models, the usual route to
  OpenAI and to any OpenAI-compatible server given `api_base`). litellm decides what it
  always decides for that provider: the provider and model name (`get_llm_provider`), the
  request's parameters for that model (`get_optional_params`: o-series renames,
  `drop_params`, unsupported values refused), what a failure means (`exception_type`,
  through `activities.llm._litellm.map_openai_error`) and the finish reason's name
  (`map_finish_reason`). The request itself
  goes out through the OpenAI SDK's `AsyncOpenAI`, as inside litellm's provider, with one
  client kept per endpoint and key. What this route leaves out is litellm's per-call
  pipeline around the provider, none of which the product uses: the executor thread that
  runs its synchronous setup, logging objects and success callbacks, cost calculation and
  model-info lookups after every call, caching and budget checks; about 2.5 ms of CPU a
  call (`bench/README.md`, the provider path).
* **`litellm.acompletion`**, its whole call path, for every other provider, and for an
  `openai/` request that needs more: a `settings.extra` key this route does not know, or
  litellm callbacks configured in the process (someone wants litellm's logging).

The bundled local model's hook (`activities.llm.models.local_model.prepare_completion`) runs before
either route.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from activities.llm._litellm import (
    STREAM_OPTIONS,
    acompletion_stream,
    classify_error,
    completion_kwargs,
    configure,
    litellm,
    map_finish_reason,
    map_openai_error,
    parse_response,
)
from activities.llm._litellm import acompletion as litellm_acompletion
from activities.llm._openai_format import Render
from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import DeltaSink
from activities.llm.models.local_model import prepare_completion
from contracts.llm import LLMRequest, LLMResponse, ToolSpec

DIRECT_PROVIDER = "openai"
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
MAX_CLIENTS = 16
"""Clients kept (one per endpoint and key); more distinct endpoints than this reuse none."""

# `completion_kwargs` keys the direct route passes to `get_optional_params` (OpenAI chat
# parameters litellm maps for the model) or uses itself; any other key takes litellm's route.
_OPTIONAL_PARAMS = frozenset(
    {
        "temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "stop", "presence_penalty",
        "frequency_penalty", "logit_bias", "user", "response_format", "seed", "tools", "tool_choice",
        "parallel_tool_calls", "logprobs", "top_logprobs", "reasoning_effort", "verbosity",
        "safety_identifier", "store", "prompt_cache_key", "service_tier", "drop_params",
    }
)  # fmt: skip
_OWN = frozenset({"model", "messages", "num_retries", "timeout", "api_base", "base_url", "extra_headers"})


async def complete(
    request: LLMRequest,
    *,
    attempt: int,
    tools: Sequence[ToolSpec] = (),
    sink: DeltaSink | None = None,
    render: Render | None = None,
) -> LLMResponse:
    """One chat completion for `request` (every message inline), offering `tools`.

    `render` gives a user message with attachments its content parts.

    With a `sink`, the call streams: each fragment goes to `sink` as it arrives, and the
    answer is assembled from the chunks (`activities.llm._streamed_completion`).

    Raises:
        ApplicationError: The provider failed, classified and redacted (never chained), or
            the bundled model is not available (`local_model_unavailable`).
    """
    configure()
    kwargs = await prepare_completion(completion_kwargs(request, attempt=attempt, tools=tools, render=render))
    if direct_route(kwargs):
        response: object = await _openai_direct(kwargs, sink)
    elif sink is not None:
        response = await acompletion_stream(kwargs, sink)
    else:
        response = await litellm_acompletion(kwargs)
    return parse_response(response, request)


def direct_route(kwargs: dict[str, Any]) -> bool:
    """Whether these `acompletion` keyword arguments can take the direct OpenAI route."""
    if not set(kwargs) <= _OPTIONAL_PARAMS | _OWN or _callbacks_configured():
        return False
    return _provider(str(kwargs["model"]), _api_base(kwargs))[1] == DIRECT_PROVIDER


def _callbacks_configured() -> bool:
    lists = ("callbacks", "success_callback", "failure_callback", "input_callback", "service_callback")
    hidden = ("_async_success_callback", "_async_failure_callback", "_async_input_callback")
    return any(getattr(litellm, name, None) for name in lists + hidden)


def _api_base(kwargs: dict[str, Any]) -> str | None:
    base = kwargs.get("api_base") or kwargs.get("base_url")
    return str(base) if base else None


@functools.lru_cache(maxsize=256)
def _provider(model: str, api_base: str | None) -> tuple[str, str]:
    """(model name, provider) as litellm resolves them; ("", "") for a string it rejects."""
    try:
        name, provider, _key, _base = litellm.get_llm_provider(model=model, api_base=api_base)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    except Exception:  # litellm's own route reports it, classified
        return "", ""
    return str(name), str(provider)  # pyright: ignore[reportUnknownArgumentType]


@functools.lru_cache(maxsize=256)
def _mapped_params(name: str, frozen: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """Litellm's parameters for model `name` and these settings (one agent's settings repeat)."""
    params: dict[str, Any] = litellm.get_optional_params(  # pyright: ignore[reportUnknownMemberType]
        model=name, custom_llm_provider=DIRECT_PROVIDER, **dict(frozen)
    )
    return params


def _settings_key(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """The cache key of the settings (None: a value that cannot be a key, e.g. a JSON schema)."""
    items = tuple(sorted((k, v) for k, v in kwargs.items() if k in _OPTIONAL_PARAMS and k != "tools"))
    try:
        hash(items)
    except TypeError:
        return None
    return items


def _request_params(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    key = _settings_key(kwargs)
    if key is None:
        settings = {k: v for k, v in kwargs.items() if k in _OPTIONAL_PARAMS and k != "tools"}
        params = _mapped_params.__wrapped__(name, tuple(settings.items()))
    else:
        params = _mapped_params(name, key)
    params = {k: v for k, v in params.items() if v not in (None, {})}
    # Tools pass through litellm's OpenAI mapping unchanged: sent as given, not cached.
    if kwargs.get("tools"):
        params["tools"] = kwargs["tools"]
    return params


@functools.lru_cache(maxsize=MAX_CLIENTS)
def _client(base_url: str, api_key: str | None, organization: str | None) -> AsyncOpenAI:
    # litellm's own retries are off (Temporal retries), and so are the SDK's.
    return AsyncOpenAI(api_key=api_key, base_url=base_url, organization=organization, max_retries=0)


def _endpoint(kwargs: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """Base URL, key and organization, looked up in litellm's order for its OpenAI provider."""
    settings: Any = litellm
    base = (
        _api_base(kwargs)
        or settings.api_base
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
        or OPENAI_DEFAULT_BASE
    )
    key = settings.api_key or settings.openai_key or os.environ.get("OPENAI_API_KEY")
    organization = settings.organization or os.environ.get("OPENAI_ORGANIZATION")
    return str(base), key, organization


async def _openai_direct(kwargs: dict[str, Any], sink: DeltaSink | None) -> object:
    model = str(kwargs["model"])
    name, _provider_name = _provider(model, _api_base(kwargs))
    try:
        params = _request_params(name, kwargs)
        if kwargs.get("extra_headers"):
            params["extra_headers"] = kwargs["extra_headers"]
        create: Any = _client(*_endpoint(kwargs)).chat.completions.create  # overloads: any params
        if sink is not None:
            params.update(stream=True, stream_options=STREAM_OPTIONS)
        response: object = await create(
            model=name, messages=kwargs["messages"], timeout=kwargs.get("timeout"), **params
        )
        if sink is not None:
            response = await _assembled(response, sink)
    except Exception as exc:
        raise classify_error(_mapped(exc, model)) from None
    # As litellm's response conversion does: a server's own finish reason ("eos", none) becomes OpenAI's.
    choices: list[Any] = list(getattr(response, "choices", None) or [])
    for choice in choices:
        choice.finish_reason = map_finish_reason(str(choice.finish_reason or "stop"))
    return response


async def _assembled(stream: Any, sink: DeltaSink) -> ChatCompletion:
    """The SDK's `ChatCompletion` that a stream of chunks adds up to, each fragment passed to `sink`."""
    completion = StreamedCompletion(sink)
    try:
        async for chunk in stream:
            completion.add_chunk(chunk)
    finally:
        await stream.close()  # at once when the call is cancelled, not when collected
    body = completion.body()
    body["choices"][0]["finish_reason"] = map_finish_reason(str(body["choices"][0]["finish_reason"]))
    return ChatCompletion.model_validate(body)


def _mapped(exc: Exception, model: str) -> Exception:
    """Exceptions of litellm pass as they are; the SDK's are mapped as litellm maps them."""
    if type(exc).__module__.startswith("litellm."):
        return exc
    return map_openai_error(exc, model, DIRECT_PROVIDER)
