"""The LLM activity: one chat completion (a provider through litellm, or the scripted model).

litellm reads API keys from the worker's environment (`OPENAI_API_KEY`, ...); nothing
secret travels in `LLMRequest` or `LLMResponse`, and provider error text is redacted
before it becomes an error, so the Temporal history and Web UI stay safe to show.
litellm's own retries are off: Temporal's retry policy is the one retry loop (see
`activities.llm.llm_errors`).

The request names its tools and refers to messages the activity has seen before in
the run (see `contracts.llm`); the activity resolves both (the worker's registry, the
message cache) and caches what is new, the answer included. The model is offered the
registry's specs of `tools`, then the request's own `tool_specs` (agents offered as tools).
The answer says which called tools the registry marks `local` and `requires_approval`.

This module does not import litellm: registering the activity costs nothing at worker
start-up. `activities.llm._litellm` (the one module that imports it) is loaded on the first
provider call, in a thread while the call heartbeats, or earlier by `warm_litellm`, which
the worker runs in the background once it polls. A call then takes one of three routes:
the scripted model (`activities.llm.models.scripted`: no litellm at all, unless the turn injects a
provider error), litellm's OpenAI provider called directly, or `litellm.acompletion`
(both in `activities.llm._provider`).

A request with a `stream` target streams by whichever route it takes: the route hands
each fragment to the call's `activities.llm.delta_publisher.DeltaPublisher`, which publishes
them in batches to the run's stream; the result is still the whole answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities._heartbeat import with_heartbeat
from activities.llm.attachment_parts import AttachmentParts
from activities.llm.delta_publisher import DeltaPublisher, DeltaSink
from activities.llm.litellm_loading import load_litellm, load_litellm_now
from activities.llm.message_cache import MessageCache
from activities.output.output_parsing import apply_output
from activities.tools.tool_registry import ToolRegistry
from contracts.activities import LLM_ACTIVITY
from contracts.errors import INVALID_INPUT, UNKNOWN_TOOL
from contracts.llm import SCRIPTED_MODEL, LLMRequest, LLMResponse, ModelMedia, ToolSpec, Usage
from conversation import ToolCall
from live.channel import LiveChannel

_log = logging.getLogger(__name__)


def warm_litellm() -> None:
    """Load litellm and make one scripted call, so the first real call pays neither.

    For a background thread (it blocks for seconds). Never raises: a failed warm-up only
    means the first LLM call loads litellm itself.
    """
    try:
        load_litellm_now()
        from activities.llm.models import scripted

        asyncio.run(scripted.complete(scripted.warm_up_request(), attempt=1))
    except Exception:
        _log.warning("litellm warm-up failed; the first LLM call will load it", exc_info=True)


async def complete(
    request: LLMRequest,
    *,
    attempt: int,
    tools: Sequence[ToolSpec] = (),
    sink: DeltaSink | None = None,
    attachments: AttachmentParts | None = None,
) -> LLMResponse:
    """One chat completion (every message inline) by the request's route, loading litellm first if needed.

    With a `sink`, the call streams and each fragment of the answer goes to `sink` as it arrives.
    `attachments` renders the user messages that carry attachments (`activities.llm.attachment_parts`).
    """
    render = attachments.content if attachments is not None else None
    if request.model == SCRIPTED_MODEL:  # loads litellm only for a turn that needs its types
        from activities.llm.models import scripted

        return await scripted.complete(request, attempt, sink, render)
    await load_litellm()
    from activities.llm import _provider

    return await _provider.complete(request, attempt=attempt, tools=tools, sink=sink, render=render)


def _priced(model: str, usage: Usage) -> Usage:
    """`usage` with its cost (litellm's prices); the scripted model has none (and needs no litellm)."""
    if model == SCRIPTED_MODEL:
        return usage.model_copy(update={"cost_usd": 0.0, "unpriced_calls": 1})
    from activities.llm._litellm import priced  # loaded by `complete` already

    return priced(model, usage)


def unique_call_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """`calls` with every id unique in the round: a repeated (or empty) id gets a `~<n>` suffix.

    Providers and local servers can repeat ids; approvals, tool results and the trace key on
    them, so they are made unique here, before the answer leaves the activity.
    """
    taken = {call.id for call in calls}
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for k, call in enumerate(calls):
        if call.id and call.id not in seen:
            seen.add(call.id)
            unique.append(call)
            continue
        n = k + 1
        while f"{call.id or 'call'}~{n}" in taken:
            n += 1
        new_id = f"{call.id or 'call'}~{n}"
        taken.add(new_id)
        seen.add(new_id)
        unique.append(call.model_copy(update={"id": new_id}))
    return unique


class LLMActivities:
    """The LLM activity, bound to the worker's tool registry and the message cache."""

    def __init__(
        self,
        registry: ToolRegistry,
        cache: MessageCache,
        live: LiveChannel | None = None,
        model_media: Mapping[str, ModelMedia] | None = None,
    ) -> None:
        """Serve tool specs from `registry`; resolve and cache messages with `cache`.

        With the worker's `live` channel, streamed calls publish their deltas there
        (`activities.llm.delta_publisher`). `model_media`: what models take beyond text, over
        litellm's map (`REACT_MODEL_MEDIA`).
        """
        self._registry = registry
        self._cache = cache
        self._live = live
        self._model_media = model_media or {}

    @activity.defn(name=LLM_ACTIVITY)
    async def llm_call(self, request: LLMRequest) -> LLMResponse:
        """Ask the model for the next step: a final answer and/or tool calls.

        Raises:
            ApplicationError: `message_cache_miss` (non-retryable: the run resends the call
                inline), `unknown_tool` or `invalid_input` (a `tool_specs` name clash; both
                non-retryable), `blob_missing` or `unsupported_media_type` (an attachment's
                bytes are gone or differ, or the model cannot take it; non-retryable), or the provider failed
                (`llm_errors.classify` decides the code, whether Temporal retries it and when).
        """
        return await with_heartbeat(self._call(request, activity.info().attempt))

    async def _call(self, request: LLMRequest, attempt: int) -> LLMResponse:
        messages = await self._cache.resolve(request)
        inline = request.model_copy(update={"prefix": None, "messages": messages})
        tools = self._tool_specs(request.tools, request.tool_specs)
        if request.model != SCRIPTED_MODEL and any(m.attachments for m in messages):
            await load_litellm()  # what the model takes is litellm's model map
        files = await AttachmentParts.load(self._cache.store, request.model, messages, self._model_media)
        if request.stream is None:
            response = await complete(inline, attempt=attempt, tools=tools, attachments=files)
        else:
            async with DeltaPublisher.for_activity(request.stream, attempt, self._live) as publisher:
                response = await complete(
                    inline, attempt=attempt, tools=tools, sink=publisher.add, attachments=files
                )
        response.usage = _priced(request.model, response.usage)
        response.tool_calls = unique_call_ids(response.tool_calls)
        agents = {spec.name for spec in request.tool_specs}  # not the registry's tools, whatever their names
        called = {c.name for c in response.tool_calls if c.name not in agents}
        response.local_tools = sorted(name for name in called if self._registry.is_local(name))
        response.approval_tools = sorted(name for name in called if self._registry.requires_approval(name))
        if request.output is not None and not response.tool_calls:
            await apply_output(response, request.output)  # structured output: parsed and checked here
        await self._cache.remember(response.assistant_message())
        return response

    def _tool_specs(self, names: list[str], inline: list[ToolSpec]) -> list[ToolSpec]:
        """The registry's specs of `names`, then the `inline` specs (agents offered as tools).

        Raises:
            ApplicationError: Non-retryable: `unknown_tool` (a name the registry lacks) or
                `invalid_input` (an inline spec has the name of a tool or of another inline spec).
        """
        unknown = [name for name in names if name not in self._registry]
        if unknown:
            available = ", ".join(self._registry.names()) or "(none)"
            raise ApplicationError(
                f"unknown tool(s) {', '.join(repr(n) for n in unknown)}; available tools: {available}",
                type=UNKNOWN_TOOL,
                non_retryable=True,
            )
        inline_names = [spec.name for spec in inline]
        clashes = sorted({name for name in inline_names if name in names or inline_names.count(name) > 1})
        if clashes:
            raise ApplicationError(
                f"tool_specs name {', '.join(map(repr, clashes))} more than once "
                "(a tool of `tools`, or twice in `tool_specs`); give each tool one name",
                type=INVALID_INPUT,
                non_retryable=True,
            )
        return [*(self._registry.spec(name) for name in names), *inline]
