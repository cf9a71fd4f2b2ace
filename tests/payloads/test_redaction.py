"""`payloads.redaction`: credentials never reach an error, a tool result or a log line."""

from __future__ import annotations

import io
import logging
import os
import time

import pytest
from pydantic import JsonValue
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import ToolActivities, ToolFailure, ToolRegistry
from activities.llm._litellm import classify_error, litellm
from contracts import ToolCallRequest
from conversation import ToolCall
from payloads.redaction import (
    REDACTED,
    RedactingFilter,
    install_log_redaction,
    is_secret_name,
    redact,
    redact_json,
)

KEY = "gw-7d1e9a4f0b2c-unshaped-key"  # no recognisable shape: only the environment gives it away


@pytest.fixture(autouse=True)
def provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_API_KEY", KEY)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("HF_TOKEN", True),
        ("GITHUB_TOKEN_2", True),
        ("DB_PASSWORD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("REACT_SNAPSHOT_SECRET", True),
        ("azure-api-key", True),
        ("PATH", False),
        ("HOME", False),
        ("KEYBOARD_LAYOUT", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("OPENAI_API_BASE", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_environment_values_are_redacted_wherever_they_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHORT_TOKEN", "abc123")  # under 8 characters: would hit ordinary words
    monkeypatch.setenv("SOME_SETTING", "not-a-secret-value")
    text = f"key={KEY}; again:{KEY}! abc123 not-a-secret-value"
    assert redact(text) == f"key={REDACTED}; again:{REDACTED}! abc123 not-a-secret-value"
    echoed = f"headers were {{'authorization': '{KEY}', 'x-api-key': \"{KEY}\"}}"
    assert redact(echoed) == f"headers were {{'authorization': '{REDACTED}', 'x-api-key': \"{REDACTED}\"}}"
    monkeypatch.delenv("MY_GATEWAY_API_KEY")
    assert redact(text) == text  # read at each call: a removed key is no longer looked for
    assert redact(f"x {KEY}", environ={"OTHER_SECRET": KEY}) == f"x {REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123_xyz=", f"Authorization: Bearer {REDACTED}"),
        ('{"authorization": "Basic dXNlcjpwYXNz"}', f'{{"authorization": "Basic {REDACTED}"}}'),
        ("bad header 'bearer eyJhbGciOi.J9.x'", f"bad header 'Bearer {REDACTED}'"),
        ("x-api-key=abcdefgh123", f"x-api-key={REDACTED}"),
        ("'api-key': 'abcdefgh123'", f"'api-key': '{REDACTED}'"),
        ("Incorrect API key provided: sk-proj-AbC123dEf456gh", f"Incorrect API key provided: {REDACTED}"),
        ("anthropic sk-ant-api03-xyzXYZ0123", f"anthropic {REDACTED}"),
        ("postgres://app:hunter2pass@db:5432/x", f"postgres://app:{REDACTED}@db:5432/x"),
        ("ghp_" + "a" * 36, REDACTED),
        ("AKIAABCDEFGHIJKLMNOP", REDACTED),
        ("hf_" + "b" * 30, REDACTED),
    ],
)
def test_credential_shapes_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # idempotent: redacting twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "Basic arithmetic: 6 * 7 = 42",
        "the task-queue is react-agent; skeleton sk-1; desk-lamp",
        "Please pass an `api_key` parameter",
        "https://api.openai.com/v1/chat/completions",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def cpu_seconds(text: str) -> float:
    """This thread's CPU time for `redact(text)`, best of three (other processes' load does not count)."""
    timings: list[float] = []
    for _ in range(3):
        started = time.thread_time()
        redact(text)
        timings.append(time.thread_time() - started)
    return min(timings)


@pytest.mark.parametrize("unit", ["a.", "a-", "x-api-key", "sk-a", "a://b:", "Authorization: ", "Bearer "])
def test_redaction_takes_linear_time_on_hostile_text(unit: str) -> None:
    size = 200_000
    text = unit * (size // len(unit))  # quadratic patterns took seconds on a tenth of this
    ordinary = "lorem ipsum " * (size // 12)
    # Measured against ordinary text of the same length (1-3x of it here): a quadratic pattern costs
    # thousands of times more, so the bound holds on any machine without timing the wall clock.
    assert cpu_seconds(text) < 10 * cpu_seconds(ordinary)


def test_redact_json_reaches_every_string() -> None:
    data: JsonValue = {"msg": f"echo {KEY}", "nested": [1, None, {f"k-{KEY}": "Bearer tok12345"}], "ok": True}
    assert redact_json(data) == {
        "msg": f"echo {REDACTED}",
        "nested": [1, None, {f"k-{REDACTED}": f"Bearer {REDACTED}"}],
        "ok": True,
    }


def test_provider_errors_are_redacted_before_they_become_application_errors() -> None:
    exc = litellm.exceptions.AuthenticationError(
        f"gateway rejected Authorization: Bearer {KEY} (key {KEY})", llm_provider="openai", model="m"
    )
    error = classify_error(exc)
    assert KEY not in error.message and REDACTED in error.message
    assert KEY not in repr(error.details)


# --- log records -------------------------------------------------------------------------


def logger_with_stream(name: str) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.StreamHandler(stream))
    return logger, stream


def test_log_filter_redacts_messages_arguments_and_tracebacks() -> None:
    logger, stream = logger_with_stream("test.redaction.logs")
    child = logging.getLogger("test.redaction.logs.child")  # propagates to the handler above
    assert install_log_redaction(logger) is install_log_redaction(logger)  # idempotent
    [handler] = logger.handlers
    assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    child.warning("calling with key %s", KEY)
    try:
        try:
            raise ValueError(f"provider said: Authorization: Bearer {KEY}")
        except ValueError as inner:
            raise RuntimeError(f"wrapped {KEY}") from inner
    except RuntimeError:
        logger.exception("activity failed")
    logger.info("bad arguments %s %s", KEY)  # a formatting error must not lose the line or leak
    output = stream.getvalue()
    assert KEY not in output
    assert output.count(REDACTED) >= 4
    assert (
        "Traceback" in output and "ValueError: provider said" in output and "RuntimeError: wrapped" in output
    )
    assert "calling with key" in output and "bad arguments" in output


def test_log_filter_reaches_handlers_of_the_root_logger() -> None:
    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root.addHandler(handler)
    try:
        install_log_redaction()
        logging.getLogger("some.library").error("echo %s", os.environ["MY_GATEWAY_API_KEY"])
    finally:
        root.removeHandler(handler)
    assert stream.getvalue() == f"echo {REDACTED}\n"


# --- tool errors -----------------------------------------------------------------------------


def leaky(mode: str) -> str:
    """A tool whose failures echo a credential.

    Args:
        mode: how to fail.
    """
    if mode == "crash":
        raise ConnectionRefusedError(f"POST https://u:{KEY}@internal/ refused; Authorization: Bearer {KEY}")
    if mode == "retryable":
        raise ToolFailure(f"busy ({KEY})", retryable=True, details={"key": KEY}, type="backend_busy")
    raise ToolFailure(f"denied for {KEY}", details={"echo": [KEY]})


async def run_leaky(mode: str) -> object:
    registry = ToolRegistry()
    registry.register(leaky)
    request = ToolCallRequest(call=ToolCall(id="c1", name="leaky", arguments=f'{{"mode": "{mode}"}}'))
    try:
        return await ActivityEnvironment().run(ToolActivities(registry).run_tool, request)
    except ApplicationError as error:
        return error


async def test_tool_errors_are_redacted_and_typed() -> None:
    crash = await run_leaky("crash")
    assert isinstance(crash, ApplicationError)
    assert (crash.type, crash.non_retryable) == ("tool_error", False)
    assert crash.details == ({"attempt": 1, "exception": "ConnectionRefusedError"},)
    assert KEY not in crash.message and crash.message.count(REDACTED) == 2
    assert crash.__cause__ is None and crash.__suppress_context__  # the tool's exception stays in the worker

    retryable = await run_leaky("retryable")
    assert isinstance(retryable, ApplicationError) and retryable.type == "backend_busy"
    assert retryable.details == ({"attempt": 1, "exception": "ToolFailure", "details": {"key": REDACTED}},)
    assert retryable.message == f"busy ({REDACTED})"

    outcome = await run_leaky("expected")
    assert not isinstance(outcome, ApplicationError)
    assert KEY not in repr(outcome) and REDACTED in repr(outcome)
