"""The LLM activity, run for real in the SDK's `ActivityEnvironment`, and litellm's one door.

The scripted model answers inside the activity with litellm's response type and
exception classes (no litellm call); the OpenAI path is exercised against a fake OpenAI
server on 127.0.0.1 (both of its routes in `test_provider_route.py`). Error
classification has its own tests in `test_run_llm_errors.py`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import LLMActivities, _litellm, default_registry, policy_for_model
from activities._heartbeat import with_heartbeat
from activities.llm import warm_litellm
from activities.message_cache import MessageCache
from activities.scripted import register_scripted_provider
from activities.summarize import summarize
from contracts import LLMRequest, LLMResponse, ModelSettings, ScriptedCall, ScriptTurn
from contracts.activities import activity_summary
from contracts.compaction import SummarizeRequest
from conversation import ContextPolicy, Message, ToolCall, estimate_tokens
from payloads.blob_store import LocalDiskBlobStore
from tests.fake_openai import FakeOpenAI, chat_completion, error_body, tool_call

ROOT = Path(__file__).resolve().parent.parent
STORE = LocalDiskBlobStore(Path(tempfile.mkdtemp(prefix="react-test-llm-")))
llm_call = LLMActivities(default_registry(), MessageCache(STORE)).llm_call


def scripted(*turns: ScriptTurn, index: int = 0, tools: list[str] | None = None) -> LLMRequest:
    turn = turns[index] if index < len(turns) else None
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=tools or [],
        iteration=index,
        scripted=ScriptedCall(index=index, length=len(turns), turn=turn),
    )


def environment(attempt: int = 1) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    return env


async def run_llm(request: LLMRequest, attempt: int = 1) -> LLMResponse:
    return await environment(attempt).run(llm_call, request)


async def llm_error(request: LLMRequest, attempt: int = 1) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await run_llm(request, attempt)
    return caught.value


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


def test_openai_messages() -> None:
    messages = [
        Message(role="user", content="hi"),
        Message(
            role="assistant",
            content="",
            thinking="secret reasoning",
            tool_calls=[ToolCall(id="c1", name="calculator", arguments='{"expression": "1"}')],
        ),
        Message(role="tool", content='{"ok": true}', tool_call_id="c1", name="calculator"),
        Message(role="assistant", content="1", thinking="more reasoning"),
    ]
    assert _litellm.to_openai_messages("Be brief.", messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "calculator", "content": '{"ok": true}'},
        {"role": "assistant", "content": "1"},
    ]


def test_completion_kwargs() -> None:
    request = LLMRequest(
        model="openai/gpt-4o-mini",
        messages=[Message(role="user", content="hi")],
        settings=ModelSettings(
            temperature=None, max_tokens=50, extra={"api_base": "http://x", "model": "evil"}
        ),
        timeout_s=7.5,
        iteration=3,
    )
    kwargs = _litellm.completion_kwargs(request, attempt=1)
    assert kwargs["model"] == "openai/gpt-4o-mini"
    assert kwargs["api_base"] == "http://x"
    assert (kwargs["max_tokens"], kwargs["num_retries"], kwargs["timeout"]) == (50, 0, 7.5)
    assert "temperature" not in kwargs and "top_p" not in kwargs
    assert "tools" not in kwargs and "metadata" not in kwargs
    assert activity_summary(request) == "llm openai/gpt-4o-mini #3"


# --- the real litellm OpenAI path, against a local fake server --------------------------------


def openai_request(api_base: str) -> LLMRequest:
    return LLMRequest(
        model="openai/gpt-4o-mini",
        system_prompt="You are terse.",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=["calculator"],
        settings=ModelSettings(extra={"api_base": api_base}),
        timeout_s=10,
        iteration=1,
    )


async def test_openai_path_against_fake_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    async with FakeOpenAI() as server:
        server.reply(
            chat_completion(tool_calls=[tool_call("calculator", '{"expression": "6 * 7"}', "call_x")])
        )
        response = await run_llm(openai_request(server.base_url))
    assert response.tool_calls == [
        ToolCall(id="call_x", name="calculator", arguments='{"expression": "6 * 7"}')
    ]
    assert response.finish_reason == "tool_calls"
    assert response.response_id == "chatcmpl-fake"
    assert response.usage.model_dump() == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "llm_calls": 1,
        "cost_usd": 11 * 0.15e-6 + 7 * 0.6e-6,  # gpt-4o-mini's price in litellm's bundled map
    }  # `unpriced_calls` 0 is left out of the JSON, like any zero of the cost fields
    assert response.usage.unpriced_calls == 0
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert {k.lower(): v for k, v in seen.headers.items()}["authorization"] == "Bearer sk-test-123"
    assert seen.body["model"] == "gpt-4o-mini"
    assert seen.body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert seen.body["tools"][0]["function"]["name"] == "calculator"
    assert seen.body["temperature"] == 0.2
    assert "sk-test-123" not in json.dumps(seen.body)


async def test_summarize_through_the_openai_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    async with FakeOpenAI() as server:
        server.reply(chat_completion("  the user asked 6 * 7  "))
        server.reply(error_body("Invalid Authorization header"), status=401)
        request = SummarizeRequest(
            model="openai/gpt-4o-mini",
            messages=[Message(role="user", content="What is 6 * 7?")],
            settings=ModelSettings(extra={"api_base": server.base_url}),
            timeout_s=10,
        )
        result = await environment().run(summarize, request)
        with pytest.raises(ApplicationError) as caught:
            await environment().run(summarize, request)
    assert result.summary == "the user asked 6 * 7" and result.usage.total_tokens == 18
    assert server.requests[0].body["messages"][1] == {"role": "user", "content": "user: What is 6 * 7?"}
    assert caught.value.type == "authentication" and caught.value.__cause__ is None


# --- litellm's one door: start-up cost, token counts, model windows ---------------------------


def test_the_worker_and_the_activities_import_without_litellm() -> None:
    probe = (
        "import sys, worker, activities, activities.llm, activities.summarize, activities.token_count\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported at start-up'\n"
        "from activities import _litellm\n"
        "assert 'litellm' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_warm_up_loads_litellm_and_calls_the_scripted_model() -> None:
    await asyncio.to_thread(warm_litellm)  # in a thread, as the worker runs it
    assert _litellm.is_configured()
    assert (await run_llm(scripted(ScriptTurn(content="after warm-up")))).content == "after warm-up"


def test_token_counts_use_the_tokenizer_and_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [ToolCall(id="c-0", name="calculator", arguments='{"expression": "1"}')]
    messages = [
        Message(role="user", content="hello world"),
        Message(role="assistant", content="", tool_calls=calls),
        Message(role="tool", content="1", tool_call_id="c-0", name="calculator"),
        Message(role="assistant", content="x" * 400),
    ]
    exact = _litellm.token_counts("gpt-4o-mini", messages)
    assert len(exact) == 4 and all(count > 0 for count in exact)
    assert exact[3] < estimate_tokens(messages[3])  # 400 x's are far fewer than 100 tokens

    def broken(**_: object) -> int:
        raise RuntimeError("no tokenizer")

    monkeypatch.setattr(_litellm.litellm, "token_counter", broken)
    assert _litellm.token_counts("gpt-4o-mini", messages) == [estimate_tokens(m) for m in messages]


def test_policy_for_model_reads_the_real_window_and_defaults_for_unknown_models() -> None:
    policy = policy_for_model("gpt-4o-mini")
    assert policy.max_input_tokens == 128_000
    assert policy.reserve_output_tokens == 16_384  # its max output, under a quarter of the window
    assert policy_for_model("no-such-provider/no-such-model-xyz") == ContextPolicy()
