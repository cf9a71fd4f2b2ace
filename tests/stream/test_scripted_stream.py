"""The scripted model streamed, and answers assembled from OpenAI chunks (no Temporal: the routes alone).

A streamed turn must answer exactly what the unstreamed turn answers, and the pieces it
hands to the delta sink must add up to that answer. The end-to-end publishing through a
run's Workflow Stream is in `test_stream_deltas.py`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from temporalio.exceptions import ApplicationError

from activities.llm._openai_format import parse_response
from activities.llm._streamed_completion import StreamedCompletion
from activities.llm.delta_publisher import Fragment
from activities.llm.models import scripted
from contracts import LLMRequest, ScriptedCall, ScriptTurn
from contracts.agent import ScriptToolCall
from conversation import Message
from tests.fake_openai import chat_completion, stream_chunks, tool_call

TURNS = [
    ScriptTurn(content="The answer is 42, as six times seven always was."),
    ScriptTurn(content="Let me compute.", thinking="6 * 7: the calculator knows.", chunk_chars=3),
    ScriptTurn(
        tool_calls=[
            ScriptToolCall(name="calculator", arguments={"expression": "6 * 7"}),
            ScriptToolCall(name="calculator", arguments='{"expression": "1 +', id="call_raw"),
        ],
        chunk_chars=5,
    ),
    ScriptTurn(content="cut", finish_reason="length", chunk_chars=1),
    ScriptTurn(),
]


def request_for(turn: ScriptTurn, index: int = 2) -> LLMRequest:
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        iteration=index,
        scripted=ScriptedCall(index=index, length=index + 1, turn=turn),
    )


class Collected:
    """A delta sink that keeps every fragment."""

    def __init__(self) -> None:
        self.fragments: list[Fragment] = []

    def __call__(self, fragment: Fragment) -> None:
        self.fragments.append(fragment)

    def text(self) -> str:
        return "".join(f.text for f in self.fragments)

    def thinking(self) -> str:
        return "".join(f.thinking for f in self.fragments)

    def arguments(self, index: int) -> str:
        return "".join(d.arguments for f in self.fragments for d in f.tool_calls if d.index == index)


@pytest.mark.parametrize("turn", TURNS)
async def test_a_streamed_turn_answers_what_the_unstreamed_turn_answers(turn: ScriptTurn) -> None:
    sink = Collected()
    unstreamed = await scripted.complete(request_for(turn), attempt=1)
    streamed = await scripted.complete(request_for(turn), 1, sink)
    assert streamed == unstreamed
    assert sink.text() == streamed.content
    assert sink.thinking() == (streamed.thinking or "")
    for k, call in enumerate(streamed.tool_calls):
        assert sink.arguments(k) == call.arguments
        first = next(d for f in sink.fragments for d in f.tool_calls if d.index == k)
        assert (first.id, first.name) == (call.id, call.name)


async def test_pieces_come_in_order_and_size() -> None:
    turn = ScriptTurn(
        content="0123456789abc",
        thinking="think",
        tool_calls=[ScriptToolCall(name="calculator", arguments='{"expression": "6 * 7"}')],
        chunk_chars=4,
    )
    sink = Collected()
    await scripted.complete(request_for(turn), 1, sink)
    kinds = ["thinking" if f.thinking else "text" if f.text else "tool" for f in sink.fragments]
    assert kinds == ["thinking"] * 2 + ["text"] * 4 + ["tool"] * 6
    assert [f.text for f in sink.fragments if f.text] == ["0123", "4567", "89ab", "c"]
    assert all(len(f.text) <= 4 and len(f.thinking) <= 4 for f in sink.fragments)
    assert [len(f.tool_calls) for f in sink.fragments if f.tool_calls] == [1] * 6


async def test_a_failing_attempt_streams_half_its_pieces_then_raises() -> None:
    turn = ScriptTurn(content="a" * 8 + "b" * 8 + "c" * 8 + "d" * 8, error="server", chunk_chars=8)
    first, second = Collected(), Collected()
    with pytest.raises(ApplicationError) as raised:
        await scripted.complete(request_for(turn), 1, first)
    assert raised.value.type == "server_error" and not raised.value.non_retryable
    assert first.text() == "a" * 8 + "b" * 8
    answer = await scripted.complete(request_for(turn), 2, second)
    assert second.text() == answer.content == turn.content


async def test_pieces_wait_their_delay() -> None:
    turn = ScriptTurn(content="x" * 10, chunk_chars=2, chunk_delay_s=0.02)
    started = time.monotonic()
    await scripted.complete(request_for(turn), 1, Collected())
    assert time.monotonic() - started >= 5 * 0.02


def test_openai_sdk_chunks_add_up_to_the_completion() -> None:
    body = chat_completion(
        "Six times seven is 42.",
        [tool_call("calculator", '{"expression": "6 * 7"}', "call_a"), tool_call("echo", "{}", "call_b")],
    )
    body["choices"][0]["message"]["reasoning_content"] = "multiply"
    sink = Collected()
    completion = StreamedCompletion(sink)
    for chunk in stream_chunks(body, 3, include_usage=True):
        completion.add_chunk(ChatCompletionChunk.model_validate(chunk))
    request = request_for(ScriptTurn())
    assembled = parse_response(ChatCompletion.model_validate(completion.body()), request)
    assert assembled == parse_response(ChatCompletion.model_validate(body), request)
    assert assembled.thinking == "multiply" and assembled.usage.total_tokens == 18
    assert sink.text() == "Six times seven is 42."
    assert [json.loads(sink.arguments(k)) for k in (0, 1)] == [{"expression": "6 * 7"}, {}]


def test_a_stream_without_usage_or_ids_still_adds_up() -> None:
    base: dict[str, Any] = {"id": "", "created": 0, "model": "m", "object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [
        {"tool_calls": [{"index": 0, "function": {"name": "f"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
    ]
    completion = StreamedCompletion(Collected())
    for delta in deltas:
        chunk = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        completion.add_chunk(ChatCompletionChunk.model_validate(chunk))
    body = completion.body()
    assert "usage" not in body and body["choices"][0]["finish_reason"] == "stop"
    assert body["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
