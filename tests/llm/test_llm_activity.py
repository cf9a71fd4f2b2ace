"""The LLM activity on the scripted model, run for real in the SDK's `ActivityEnvironment`.

The scripted model answers inside the activity with litellm's response type and
exception classes (no litellm call); heartbeats and cancellation reach a call. The OpenAI
path and litellm's door are in `test_litellm_door.py` (both routes in
`test_provider_route.py`); error classification in `test_run_llm_errors.py`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from activities._heartbeat import with_heartbeat
from activities.llm import _litellm
from activities.llm.models.scripted import register_scripted_provider
from contracts import ScriptTurn
from conversation import ToolCall
from tests.llm_activity_helpers import environment, llm_call, run_llm, scripted

# --- the scripted model -----------------------------------------------------------------


async def test_scripted_final_answer() -> None:
    response = await run_llm(scripted(ScriptTurn(content="42", thinking="6 * 7 is 42")))
    assert response.content == "42"
    assert response.tool_calls == []
    assert response.thinking == "6 * 7 is 42"
    assert response.finish_reason == "stop"
    assert response.usage.llm_calls == 1
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens > 0
    assert response.response_id == "scripted-0"


async def test_scripted_tool_calls_keep_raw_arguments() -> None:
    turn = ScriptTurn.model_validate(
        {
            "tool_calls": [
                {"name": "calculator", "arguments": {"expression": "6 * 7"}, "id": "call_a"},
                {"name": "calculator", "arguments": '{"expression": "1 +'},
            ]
        }
    )
    response = await run_llm(scripted(turn, tools=["calculator"]))
    assert response.content == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == [
        ToolCall(id="call_a", name="calculator", arguments='{"expression": "6 * 7"}'),
        ToolCall(id="call_0_1", name="calculator", arguments='{"expression": "1 +'),
    ]


def test_register_scripted_provider_is_idempotent() -> None:
    register_scripted_provider()
    register_scripted_provider()
    assert [p["provider"] for p in _litellm.litellm.custom_provider_map].count("scripted") == 1


async def test_cancellation_reaches_a_slow_call() -> None:
    env = environment()
    task = asyncio.ensure_future(env.run(llm_call, scripted(ScriptTurn(content="x", delay_s=30))))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 2


async def test_with_heartbeat_beats_while_waiting() -> None:
    env = environment()
    beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    result = await env.run(with_heartbeat, asyncio.sleep(0.25, "done"), 0.05)
    assert result == "done"
    assert len(beats) >= 3
    count = len(beats)
    await asyncio.sleep(0.15)
    assert len(beats) == count  # stopped with the call


async def test_with_heartbeat_sends_nothing_for_a_call_shorter_than_the_interval() -> None:
    env = environment()
    beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    assert await env.run(with_heartbeat, asyncio.sleep(0.05, "quick"), 0.5) == "quick"
    await asyncio.sleep(0.6)
    assert beats == []


# --- request building ---------------------------------------------------------------------


# --- the real litellm OpenAI path, against a local fake server --------------------------------


# --- litellm's one door: start-up cost, token counts, model windows ---------------------------
