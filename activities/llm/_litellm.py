"""The one door to litellm: the LLM activities' calls through it, and its wire format.

Importing this module imports litellm (seconds of CPU, through `activities.llm._litellm_setup`,
the only module that imports litellm and where it is configured, once, offline), so
nothing on the worker's start-up path imports it: the LLM activities load it on first use,
in a thread (`activities.llm.litellm_loading.load_litellm`), and the worker warms it in the background
once it polls. What the bundled model map knows of a model (prices, token counts, the
context window, native structured output) is `activities.llm._litellm_model_map`; both are
re-exported here.

It speaks the OpenAI chat format (messages, tools and responses, defined in
`activities.llm._openai_format` and re-exported here; the scripted provider's metadata) used
by the LLM activity, `summarize` and exact token counting, and turns every litellm
failure into the project's error vocabulary (`activities.llm.llm_errors`). Which route a
call takes (litellm's `acompletion`, or its OpenAI provider called directly) is
`activities.llm._provider`'s decision; the scripted model is `activities.llm.models.scripted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.llm._litellm_model_map import native_schema, policy_for_model, priced, token_counts
from activities.llm._litellm_setup import (
    SCRIPTED_LITELLM_MODEL,
    SCRIPTED_PROVIDER,
    AuthenticationError,
    BadRequestError,
    ContentPolicyViolationError,
    ContextWindowExceededError,
    CustomLLM,
    InternalServerError,
    ModelResponse,
    OpenAIError,
    RateLimitError,
    Timeout,
    configure,
    is_configured,
    litellm,
    map_finish_reason,
)
from activities.llm._openai_format import (
    Render,
    openai_message,
    parse_response,
    to_openai_messages,
    to_openai_tools,
)
from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import DeltaSink
from activities.llm.llm_errors import classify
from activities.output.output_parsing import response_format
from contracts.errors import CONTENT_POLICY, CONTEXT_WINDOW_EXCEEDED
from contracts.llm import SCRIPTED_MODEL, LLMRequest, ScriptedCall, ToolSpec
from conversation import Message

__all__ = [
    "SCRIPTED_LITELLM_MODEL",
    "SCRIPTED_PROVIDER",
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
    "native_schema",
    "openai_message",
    "parse_response",
    "policy_for_model",
    "priced",
    "to_openai_messages",
    "to_openai_tools",
    "token_counts",
]

STREAM_OPTIONS = {"include_usage": True}
"""Asked of every streamed call: the provider's usage in the last chunk (litellm never rejects it)."""
SCRIPTED_CALL_KEY = "scripted_call"
ATTEMPT_KEY = "attempt"

# Keys the activity sets itself; `settings.extra` cannot override them.
_RESERVED = frozenset({"model", "messages", "tools", "num_retries", "timeout", "metadata", "stream"})
# litellm classes whose meaning no status code carries (both are 400s).
_LITELLM_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (ContextWindowExceededError, CONTEXT_WINDOW_EXCEEDED),
    (ContentPolicyViolationError, CONTENT_POLICY),
)


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


def completion_kwargs(
    request: LLMRequest, *, attempt: int, tools: Sequence[ToolSpec] = (), render: Render | None = None
) -> dict[str, Any]:
    """The keyword arguments of `litellm.acompletion` for a request (litellm's own retries off).

    `render` gives a user message with attachments its content parts.

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
        messages=to_openai_messages(request.system_prompt, messages, render),
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


def scripted_metadata(call: ScriptedCall | None, attempt: int) -> dict[str, Any]:
    """The `metadata` the scripted provider reads (as `litellm_params["metadata"]`)."""
    return {
        SCRIPTED_CALL_KEY: call.model_dump(mode="json") if call is not None else None,
        ATTEMPT_KEY: attempt,
    }
