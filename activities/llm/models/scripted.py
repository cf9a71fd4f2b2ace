"""The scripted model: answers from the agent's script, like a provider, without loading litellm.

Users test their agents with it (no API key, deterministic answers, injected
delays and provider errors). An ordinary turn is answered here: its answer is built in
the OpenAI chat format and parsed as a provider's (`activities.llm._openai_format`), so a
worker's first scripted call never waits for litellm's seconds-long import. A turn that
needs litellm's types goes to `activities.llm.models._scripted_provider` (litellm loaded first, off
the event loop): an injected provider error (a litellm exception, classified as OpenAI's),
a call past the script's end, or a finish reason outside OpenAI's five (litellm maps it).
A streamed call sends the turn in pieces to a delta sink and assembles its answer from
them, as the provider routes do. The scripted benchmark scenario measures no litellm call
at all (the provider-path scenario does). The litellm custom provider `scripted` is in
`activities.llm.models._scripted_provider` too.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from activities.llm._openai_format import Render, parse_response, to_openai_messages
from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import DeltaSink
from activities.llm.models._scripted_turns import finished, pieces, response_body, send
from contracts.agent import ScriptTurn
from contracts.llm import SCRIPTED_MODEL, LLMRequest, LLMResponse, ScriptedCall
from conversation import Message

_OPENAI_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "function_call", "content_filter"})


async def complete(
    request: LLMRequest, attempt: int, sink: DeltaSink | None = None, render: Render | None = None
) -> LLMResponse:
    """The scripted model's answer to `request` (every message inline), parsed and classified as litellm's.

    With a `sink`, the answer streams: after `delay_s`, the turn's thinking, then its content,
    then each tool call (its id and name with the first piece of its arguments) go out in
    pieces of `chunk_chars` characters, `chunk_delay_s` before each piece. `render` gives a
    user message with attachments its content parts (what a `describe_input` turn describes).

    Raises:
        ApplicationError: the turn's injected provider error, or the script cannot answer.
    """
    messages = to_openai_messages(
        request.system_prompt, [m for m in request.messages if isinstance(m, Message)], render
    )
    call = request.scripted
    if call is None or call.turn is None or not _plain(call.turn, attempt):
        from activities.llm.litellm_loading import load_litellm
        from activities.llm.models import _scripted_provider

        await load_litellm()
        return await _scripted_provider.complete(request, attempt, messages, sink)
    turn = call.turn
    if turn.delay_s > 0:
        await asyncio.sleep(turn.delay_s)
    body = response_body(turn, call.index, messages)
    if sink is not None:
        body = await _streamed(body, turn, sink)
    return parse_response(_as_object(body), request)


def _plain(turn: ScriptTurn, attempt: int) -> bool:
    """Whether this attempt of `turn` answers without litellm (no error to raise, no reason to map)."""
    failing = turn.error is not None and attempt <= turn.error_times
    return not failing and (turn.finish_reason is None or turn.finish_reason in _OPENAI_FINISH_REASONS)


async def _streamed(whole: dict[str, Any], turn: ScriptTurn, sink: DeltaSink) -> dict[str, Any]:
    """Send `whole`'s message to `sink` in pieces; the chat completion the pieces add up to."""
    completion = StreamedCompletion(sink)
    await send(list(pieces(whole["choices"][0]["message"], turn.chunk_chars)), turn, completion)
    return finished(completion, whole)


class _Fields(SimpleNamespace):
    """A JSON object read by attribute, as a provider SDK's response is (a missing field is None)."""

    def __getattr__(self, name: str) -> Any:
        return None


def _as_object(value: Any) -> Any:
    if isinstance(value, dict):
        return _Fields(**{str(k): _as_object(v) for k, v in value.items()})  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [_as_object(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def warm_up_request() -> LLMRequest:
    """A one-turn scripted request: a call that needs no key and no network."""
    turn = ScriptTurn(content="ready")
    return LLMRequest(
        model=SCRIPTED_MODEL,
        messages=[Message(role="user", content="warm-up")],
        iteration=0,
        scripted=ScriptedCall(index=0, length=1, turn=turn),
    )


def register_scripted_provider() -> None:
    """Register the `scripted` provider with litellm (loads litellm; idempotent)."""
    from activities.llm.models import _scripted_provider

    _scripted_provider.register_scripted_provider()
