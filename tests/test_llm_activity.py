"""The LLM activity, run for real in the SDK's `ActivityEnvironment`.

The scripted provider goes through litellm like a real provider; the OpenAI
path is exercised against a fake OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, TypedDict

import httpx
import litellm
import pytest
from litellm.exceptions import (
    APIConnectionError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    ContentPolicyViolationError,
    ContextWindowExceededError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    Timeout,
)
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import llm_call
from activities._heartbeat import with_heartbeat
from activities.llm import completion_kwargs, to_openai_messages
from activities.llm_errors import classify
from activities.scripted import register_scripted_provider
from contracts import LLMRequest, LLMResponse, ModelSettings, ScriptedCall, ScriptTurn, ToolSpec
from contracts.activities import activity_summary
from conversation import Message, ToolCall
from tests.fake_openai import FakeOpenAI, FakeReply, chat_completion, error_body, tool_call

CALC = ToolSpec(
    name="calculator",
    description="Evaluate arithmetic.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)


def scripted(*turns: ScriptTurn, index: int = 0, tools: list[ToolSpec] | None = None) -> LLMRequest:
    turn = turns[index] if index < len(turns) else None
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=tools or [],
        request_id="req-1",
        run_id="run-1",
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
    response = await run_llm(scripted(turn, tools=[CALC]))
    assert response.content == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == [
        ToolCall(id="call_a", name="calculator", arguments='{"expression": "6 * 7"}'),
        ToolCall(id="call_0_1", name="calculator", arguments='{"expression": "1 +'),
    ]


async def test_scripted_delay_then_error() -> None:
    started = time.monotonic()
    error = await llm_error(scripted(ScriptTurn(content="late", delay_s=0.2, error="server")))
    assert time.monotonic() - started >= 0.2
    assert error.type == "InternalServerError"
    assert not error.non_retryable


async def test_scripted_error_times_then_answer() -> None:
    request = scripted(ScriptTurn(content="finally", error="rate_limit", error_times=2))
    for attempt in (1, 2):
        error = await llm_error(request, attempt)
        assert error.type == "RateLimitError"
        assert not error.non_retryable
        assert error.next_retry_delay == timedelta(seconds=1)
    assert (await run_llm(request, attempt=3)).content == "finally"


@pytest.mark.parametrize(
    ("kind", "error_type", "retryable"),
    [
        ("rate_limit", "RateLimitError", True),
        ("timeout", "Timeout", True),
        ("auth", "AuthenticationError", False),
        ("server", "InternalServerError", True),
    ],
)
async def test_scripted_error_kinds(kind: str, error_type: str, retryable: bool) -> None:
    error = await llm_error(scripted(ScriptTurn.model_validate({"content": "x", "error": kind})))
    assert (error.type, error.non_retryable) == (error_type, not retryable)
    assert f"scripted {kind} error on call 1" in error.message


async def test_scripted_past_end_is_non_retryable() -> None:
    error = await llm_error(scripted(ScriptTurn(content="a"), ScriptTurn(content="b"), index=2))
    assert error.non_retryable
    assert error.type == "ScriptError"
    assert "call 3 is past the end of the script (2 turns)" in error.message


async def test_scripted_without_script_is_non_retryable() -> None:
    request = scripted(ScriptTurn(content="a")).model_copy(update={"scripted": None})
    assert (await llm_error(request)).non_retryable


def test_register_scripted_provider_is_idempotent() -> None:
    register_scripted_provider()
    register_scripted_provider()
    assert [p["provider"] for p in litellm.custom_provider_map].count("scripted") == 1


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
    assert to_openai_messages("Be brief.", messages) == [
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
        request_id="r",
        run_id="u",
        iteration=3,
    )
    kwargs = completion_kwargs(request, attempt=1)
    assert kwargs["model"] == "openai/gpt-4o-mini"
    assert kwargs["api_base"] == "http://x"
    assert (kwargs["max_tokens"], kwargs["num_retries"], kwargs["timeout"]) == (50, 0, 7.5)
    assert "temperature" not in kwargs and "top_p" not in kwargs
    assert "tools" not in kwargs and "metadata" not in kwargs
    assert activity_summary(request) == "llm openai/gpt-4o-mini #3"


# --- error classification -------------------------------------------------------------------


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("POST", "https://api.example/v1"))


class Provider(TypedDict):
    llm_provider: str
    model: str


P: Provider = {"llm_provider": "openai", "model": "gpt-4o-mini"}


@pytest.mark.parametrize(
    ("exc", "error_type", "retryable"),
    [
        (RateLimitError("slow down", **P), "RateLimitError", True),
        (Timeout("too slow", **P), "Timeout", True),
        (APIConnectionError("refused", **P), "APIConnectionError", True),
        (InternalServerError("oops", **P), "InternalServerError", True),
        (ServiceUnavailableError("down", **P), "ServiceUnavailableError", True),
        (BadGatewayError("gateway", **P), "BadGatewayError", True),
        (AuthenticationError("bad key", **P), "AuthenticationError", False),
        (PermissionDeniedError("no", response=response(403), **P), "PermissionDeniedError", False),
        (NotFoundError("no such model", **P), "NotFoundError", False),
        (BadRequestError("bad", **P), "BadRequestError", False),
        (ContextWindowExceededError("too long", **P), "ContextWindowExceededError", False),
        (ContentPolicyViolationError("refused", **P), "ContentPolicyViolationError", False),
        (TimeoutError(), "Timeout", True),
        (httpx.ReadTimeout("read timed out"), "Timeout", True),
        (httpx.ConnectError("refused"), "APIConnectionError", True),
        (RuntimeError("something else"), "RuntimeError", True),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_classify(exc: Exception, error_type: str, retryable: bool) -> None:
    error = classify(exc)
    assert (error.type, error.non_retryable) == (error_type, not retryable)
    assert error.message
    assert not error.message.startswith("litellm.")


def test_classify_status_codes() -> None:
    def api_error(status: int) -> Exception:
        return litellm.APIError(status, "status", **P)  # pyright: ignore[reportPrivateImportUsage]

    assert not classify(api_error(408)).non_retryable
    assert not classify(api_error(409)).non_retryable
    assert not classify(api_error(529)).non_retryable
    assert classify(api_error(422)).non_retryable


def test_retry_after_seconds_ms_and_date() -> None:
    seconds = RateLimitError("x", response=response(429, {"Retry-After": "7"}), **P)
    assert classify(seconds).next_retry_delay == timedelta(seconds=7)
    millis = RateLimitError("x", response=response(429, {"retry-after-ms": "250", "retry-after": "7"}), **P)
    assert classify(millis).next_retry_delay == timedelta(milliseconds=250)
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    dated = ServiceUnavailableError("x", response=response(503, {"retry-after": when}), **P)
    delay = classify(dated).next_retry_delay
    assert delay is not None and timedelta(seconds=25) < delay <= timedelta(seconds=30)
    assert classify(RateLimitError("x", **P)).next_retry_delay is None
    garbage = RateLimitError("x", response=response(429, {"retry-after": "soon"}), **P)
    assert classify(garbage).next_retry_delay is None


def test_litellm_response_headers_and_x_should_retry() -> None:
    exc = InternalServerError("x", **P)
    exc.litellm_response_headers = httpx.Headers({"retry-after": "3"})  # type: ignore[attr-defined]
    assert classify(exc).next_retry_delay == timedelta(seconds=3)
    refused = InternalServerError("x", response=response(500, {"x-should-retry": "false"}), **P)
    assert classify(refused).non_retryable
    conflict = BadRequestError("x", response=response(400, {"x-should-retry": "true"}), **P)
    assert not classify(conflict).non_retryable


# --- the real litellm OpenAI path, against a local fake server --------------------------------


def openai_request(api_base: str) -> LLMRequest:
    return LLMRequest(
        model="openai/gpt-4o-mini",
        system_prompt="You are terse.",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=[CALC],
        settings=ModelSettings(extra={"api_base": api_base}),
        timeout_s=10,
        request_id="req-1",
        run_id="run-1",
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
    }
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert {k.lower(): v for k, v in seen.headers.items()}["authorization"] == "Bearer sk-test-123"
    assert seen.body["model"] == "gpt-4o-mini"
    assert seen.body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert seen.body["tools"][0]["function"]["name"] == "calculator"
    assert seen.body["temperature"] == 0.2
    assert "sk-test-123" not in json.dumps(seen.body)


@pytest.mark.parametrize(
    ("reply", "error_type", "retryable", "delay"),
    [
        (FakeReply(error_body("Rate limit reached"), 429, {"retry-after": "2"}), "RateLimitError", True, 2),
        (FakeReply(error_body("Incorrect API key provided"), 401), "AuthenticationError", False, None),
        (FakeReply(chat_completion("too late"), delay_s=1.0), "Timeout", True, None),
    ],
    ids=["rate_limit", "auth", "timeout"],
)
async def test_openai_errors(
    monkeypatch: pytest.MonkeyPatch, reply: FakeReply, error_type: str, retryable: bool, delay: int | None
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    async with FakeOpenAI() as server:
        server.reply(reply.body, status=reply.status, headers=reply.headers, delay_s=reply.delay_s)
        request = openai_request(server.base_url).model_copy(update={"timeout_s": 0.3})
        error = await llm_error(request)
        assert len(server.requests) == 1  # litellm does not retry: Temporal owns retries
    assert (error.type, error.non_retryable) == (error_type, not retryable)
    assert error.next_retry_delay == (timedelta(seconds=delay) if delay else None)


def test_missing_api_key_is_a_non_retryable_authentication_error() -> None:
    exc = InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`",
        llm_provider="openai",
        model="gpt-4o-mini",
    )
    error = classify(exc)
    assert (error.type, error.non_retryable) == ("AuthenticationError", True)
    assert "worker's environment" in error.message
