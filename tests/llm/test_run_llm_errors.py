"""LLM failures: codes of the error vocabulary, retried where a provider would retry, else failing fast."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, TypedDict

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.llm._litellm import classify_error, litellm
from contracts import RunResult, ScriptTurn
from contracts.errors import DESCRIPTIONS
from tests.fake_openai import FakeOpenAI, FakeReply, chat_completion, error_body
from tests.helpers import start_run, turn
from tests.llm_activity_helpers import llm_error, openai_request, run_llm, scripted

errors = litellm.exceptions  # litellm's exception classes, reached through the one door


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("POST", "https://api.example/v1"))


class Provider(TypedDict):
    llm_provider: str
    model: str


P: Provider = {"llm_provider": "openai", "model": "gpt-4o-mini"}


# --- classification of provider exceptions -------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "code", "retryable"),
    [
        (errors.RateLimitError("slow down", **P), "rate_limit", True),
        (errors.Timeout("too slow", **P), "timeout", True),
        (errors.APIConnectionError("refused", **P), "connection", True),
        (errors.InternalServerError("oops", **P), "server_error", True),
        (errors.ServiceUnavailableError("down", **P), "server_error", True),
        (errors.BadGatewayError("gateway", **P), "server_error", True),
        (errors.AuthenticationError("bad key", **P), "authentication", False),
        (errors.PermissionDeniedError("no", response=response(403), **P), "permission_denied", False),
        (errors.NotFoundError("no such model", **P), "not_found", False),
        (errors.BadRequestError("bad", **P), "bad_request", False),
        (errors.UnprocessableEntityError("bad", response=response(422), **P), "bad_request", False),
        (errors.ContextWindowExceededError("too long", **P), "context_window_exceeded", False),
        (errors.ContentPolicyViolationError("refused", **P), "content_policy", False),
        # litellm labels a 401 whose body says `invalid_request_error` a BadRequestError.
        (errors.BadRequestError("bad header", response=response(401), **P), "authentication", False),
        (TimeoutError(), "timeout", True),
        (httpx.ReadTimeout("read timed out"), "timeout", True),
        (httpx.ConnectError("refused"), "connection", True),
        (RuntimeError("something else"), "provider_error", True),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_classify(exc: Exception, code: str, retryable: bool) -> None:
    error = classify_error(exc)
    assert (error.type, error.non_retryable) == (code, not retryable)
    assert error.type in DESCRIPTIONS
    assert error.message and not error.message.startswith("litellm.")
    assert error.details[0]["exception"] == type(exc).__name__


def test_classify_status_codes() -> None:
    def api_error(status: int) -> ApplicationError:
        return classify_error(litellm.APIError(status, "status", **P))  # pyright: ignore[reportPrivateImportUsage]

    assert [(e.type, e.non_retryable) for e in map(api_error, (408, 409, 529, 422, 402))] == [
        ("timeout", False),
        ("provider_error", False),
        ("server_error", False),
        ("bad_request", True),
        ("bad_request", True),
    ]
    assert api_error(529).details[0]["status_code"] == 529


def test_retry_after_seconds_ms_and_date() -> None:
    def delay(exc: Exception) -> timedelta | None:
        return classify_error(exc).next_retry_delay

    assert delay(errors.RateLimitError("x", response=response(429, {"Retry-After": "7"}), **P)) == timedelta(
        seconds=7
    )
    both = {"retry-after-ms": "250", "retry-after": "7"}
    assert delay(errors.RateLimitError("x", response=response(429, both), **P)) == timedelta(milliseconds=250)
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    dated = delay(errors.ServiceUnavailableError("x", response=response(503, {"retry-after": when}), **P))
    assert dated is not None and timedelta(seconds=25) < dated <= timedelta(seconds=30)
    assert delay(errors.RateLimitError("x", **P)) is None
    for garbage in ("soon", "-3", "nan", "inf", "1e308", "90000"):  # unparsable, negative, absurd
        assert (
            delay(errors.RateLimitError("x", response=response(429, {"retry-after": garbage}), **P)) is None
        )


def test_litellm_response_headers_and_x_should_retry() -> None:
    exc = errors.InternalServerError("x", **P)
    exc.litellm_response_headers = httpx.Headers({"retry-after": "3"})  # type: ignore[attr-defined]
    assert classify_error(exc).next_retry_delay == timedelta(seconds=3)
    refused = errors.InternalServerError("x", response=response(500, {"x-should-retry": "false"}), **P)
    assert classify_error(refused).non_retryable
    conflict = errors.BadRequestError("x", response=response(400, {"x-should-retry": "true"}), **P)
    assert not classify_error(conflict).non_retryable


def test_missing_api_key_is_a_non_retryable_authentication_error() -> None:
    exc = errors.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`", **P
    )
    error = classify_error(exc)
    assert (error.type, error.non_retryable) == ("authentication", True)
    assert "worker's environment" in error.message


def test_long_provider_messages_are_cut() -> None:
    error = classify_error(errors.InternalServerError("<html>" + "x" * 50_000, **P))
    assert len(error.message) < 4_100 and error.message.endswith("more characters]")


# --- the scripted model's errors, and the real OpenAI path's ---------------------------------


async def test_scripted_delay_then_error() -> None:
    started = time.monotonic()
    error = await llm_error(scripted(ScriptTurn(content="late", delay_s=0.2, error="server")))
    assert time.monotonic() - started >= 0.2
    assert error.type == "server_error"
    assert not error.non_retryable


async def test_scripted_error_times_then_answer() -> None:
    request = scripted(ScriptTurn(content="finally", error="rate_limit", error_times=2))
    for attempt in (1, 2):
        error = await llm_error(request, attempt)
        assert error.type == "rate_limit"
        assert not error.non_retryable
        assert error.next_retry_delay == timedelta(seconds=1)
    assert (await run_llm(request, attempt=3)).content == "finally"


@pytest.mark.parametrize(
    ("kind", "error_type", "retryable"),
    [
        ("rate_limit", "rate_limit", True),
        ("timeout", "timeout", True),
        ("auth", "authentication", False),
        ("server", "server_error", True),
    ],
)
async def test_scripted_error_kinds(kind: str, error_type: str, retryable: bool) -> None:
    error = await llm_error(scripted(ScriptTurn.model_validate({"content": "x", "error": kind})))
    assert (error.type, error.non_retryable) == (error_type, not retryable)
    assert f"scripted {kind} error on call 1" in error.message


async def test_scripted_past_end_is_non_retryable() -> None:
    error = await llm_error(scripted(ScriptTurn(content="a"), ScriptTurn(content="b"), index=2))
    assert error.non_retryable
    assert error.type == "script_exhausted"
    assert "call 3 is past the end of the script (2 turns)" in error.message


async def test_scripted_without_script_is_non_retryable() -> None:
    request = scripted(ScriptTurn(content="a")).model_copy(update={"scripted": None})
    error = await llm_error(request)
    assert (error.type, error.non_retryable) == ("bad_request", True)


@pytest.mark.parametrize(
    ("reply", "error_type", "retryable", "delay"),
    [
        (FakeReply(error_body("Rate limit reached"), 429, {"retry-after": "2"}), "rate_limit", True, 2),
        (FakeReply(error_body("Incorrect API key provided"), 401), "authentication", False, None),
        (FakeReply(chat_completion("too late"), delay_s=1.0), "timeout", True, None),
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


# --- a plain 401 through litellm's real OpenAI path ---------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        error_body("Incorrect API key provided", code="invalid_api_key"),
        # litellm maps this one to BadRequestError: `invalid_request_error` without that phrase.
        error_body("Invalid Authorization header"),
        {"error": "unauthorized"},
        {"detail": "Unauthorized"},
    ],
    ids=["openai", "invalid_request_error", "string", "detail"],
)
async def test_a_plain_401_is_authentication(monkeypatch: pytest.MonkeyPatch, body: dict[str, Any]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-401-key")
    async with FakeOpenAI() as server:
        server.reply(body, status=401)
        error = await llm_error(openai_request(server.base_url))
    assert (error.type, error.non_retryable) == ("authentication", True)
    assert error.details[0]["status_code"] == 401
    assert error.__cause__ is None and error.__suppress_context__  # nothing chained into history


# --- whole runs ------------------------------------------------------------------------------


async def llm_attempts(handle: WorkflowHandle[Any, RunResult]) -> list[int]:
    history = await handle.fetch_history()
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def test_rate_limit_then_success(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("after retry", error="rate_limit", error_times=1)])
    result = await handle.result()
    assert result.status == "completed" and result.result == "after retry"
    assert await llm_attempts(handle) == [2]


async def test_server_error_twice_then_success(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("recovered", error="server", error_times=2)])
    result = await handle.result()
    assert result.result == "recovered"
    assert await llm_attempts(handle) == [3]


async def test_auth_error_fails_fast_without_retries(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("never", error="auth", error_times=5)])
    result = await handle.result()
    assert result.status == "failed" and result.outcome.termination_reason == "error"
    assert result.outcome.error is not None and result.outcome.error.type == "authentication"
    assert await llm_attempts(handle) == [1]


async def test_call_past_the_end_of_the_script_fails_clearly(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [])
    result = await handle.result()
    assert result.status == "failed"
    assert result.outcome.error is not None and result.outcome.error.type == "script_exhausted"
    assert "past the end of the script" in result.outcome.error.message
    assert await llm_attempts(handle) == [1]
