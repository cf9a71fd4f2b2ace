"""Provider failures as Temporal `ApplicationError`s: an error code, retryable or not, and when to retry.

Provider SDK retries are disabled (`num_retries=0`), so Temporal's retry policy is the
only retry loop; this module decides which failures it may retry. The rules follow the
Temporal OpenAI Agents integration's model activity:

* timeouts, connection errors and status 408, 409, 429 and 5xx are retryable;
* other 4xx (auth, permission, bad request, model not found, context window exceeded,
  content policy) are not: the same request would fail again;
* an `x-should-retry: true|false` response header overrides the status code;
* `retry-after-ms` / `retry-after` (seconds or an HTTP date) become the error's
  `next_retry_delay`, so Temporal waits as long as the provider asked.

Exceptions that carry no status code and are not known timeouts or connection errors
are retryable, as in Temporal's default. A run's LLM retry policy bounds the attempts.

The error's `type` is a code of `contracts.errors` (it becomes the run's `RunError.type`).
The HTTP status decides it before the exception's class does: litellm labels some 401s
`BadRequestError` (any body whose type is `invalid_request_error`), which is still an
authentication failure. The message is the provider's, redacted (`payloads.redaction`)
and bounded; `details` carries `{"exception": <class name>, "status_code": <int|None>}`.
This module does not import litellm: `activities.llm._litellm` passes the litellm classes
that need a code of their own.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import cast

import httpx
import openai
from temporalio.exceptions import ApplicationError

from contracts.errors import (
    AUTHENTICATION,
    BAD_REQUEST,
    CONNECTION,
    CONTENT_POLICY,
    CONTEXT_WINDOW_EXCEEDED,
    DESCRIPTIONS,
    NOT_FOUND,
    PERMISSION_DENIED,
    PROVIDER_ERROR,
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
)
from payloads.redaction import redact

MAX_RETRY_AFTER = timedelta(days=1)
"""A longer (or non-finite) `retry-after` is ignored, as a garbled one is: Temporal's backoff applies."""
MAX_MESSAGE_CHARS = 4_000
"""Longer provider messages (a gateway's HTML error page, say) are cut: history keeps them."""

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_NON_RETRYABLE_CODES = frozenset({CONTEXT_WINDOW_EXCEEDED, CONTENT_POLICY})
_STATUS_CODES = {
    400: BAD_REQUEST,
    401: AUTHENTICATION,
    403: PERMISSION_DENIED,
    404: NOT_FOUND,
    408: TIMEOUT,
    409: PROVIDER_ERROR,
    422: BAD_REQUEST,
    429: RATE_LIMIT,
}
_TIMEOUTS = (openai.APITimeoutError, httpx.TimeoutException, asyncio.TimeoutError, TimeoutError)
_CONNECTION = (openai.APIConnectionError, httpx.TransportError, ConnectionError)
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+: )+")
# litellm reports a missing API key as a 500 from the client library; no retry can fix it.
_MISSING_CREDENTIALS = ("missing credentials", "api_key client option must be set")


def classify(exc: BaseException, known: Sequence[tuple[type[BaseException], str]] = ()) -> ApplicationError:
    """The `ApplicationError` to raise from an LLM activity for a provider failure.

    Args:
        exc: What the provider call raised (through litellm, or the scripted provider).
        known: Exception classes with a code of their own (checked after the status codes
            401, 403, 404 and 429, which always win).

    Returns:
        An error whose `type` is an error code, whose message is the provider's
        (redacted), and whose retryability and `next_retry_delay` follow the module's rules.
        Raise it `from None`: a chained provider exception would reach history unredacted.
    """
    if isinstance(exc, ApplicationError):
        return exc
    status = status_code(exc)
    details = {"exception": type(exc).__name__, "status_code": status}
    if _missing_credentials(exc):
        message = f"no API key for this model in the worker's environment ({_message(exc)})"
        return ApplicationError(message, details, type=AUTHENTICATION, non_retryable=True)
    code = error_code(exc, known)
    retryable = _is_retryable(exc, code)
    return ApplicationError(
        _message(exc),
        details,
        type=code,
        non_retryable=not retryable,
        next_retry_delay=retry_after(exc) if retryable else None,
    )


def error_code(exc: BaseException, known: Sequence[tuple[type[BaseException], str]] = ()) -> str:
    """The error code (`contracts.errors`) of a provider failure."""
    own: object = getattr(exc, "error_code", None)
    if isinstance(own, str) and own in DESCRIPTIONS:
        return own
    status = status_code(exc)
    if status in (401, 403, 404, 429):
        return _STATUS_CODES[status]
    for cls, code in known:
        if isinstance(exc, cls):
            return code
    if isinstance(exc, _TIMEOUTS):
        return TIMEOUT
    if isinstance(exc, _CONNECTION):  # before the status: litellm gives connection errors a 500
        return CONNECTION
    if status is None:
        return PROVIDER_ERROR
    if status >= 500:
        return SERVER_ERROR
    return _STATUS_CODES.get(status, BAD_REQUEST if 400 <= status < 500 else PROVIDER_ERROR)


def _missing_credentials(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _MISSING_CREDENTIALS)


def _is_retryable(exc: BaseException, code: str) -> bool:
    if code in _NON_RETRYABLE_CODES:
        return False
    should_retry = (_header(exc, "x-should-retry") or "").lower()
    if should_retry in ("true", "false"):
        return should_retry == "true"
    if isinstance(exc, _TIMEOUTS + _CONNECTION):
        return True
    status = status_code(exc)
    if status is None:
        return True
    return status in _RETRYABLE_STATUS or status >= 500


def status_code(exc: BaseException) -> int | None:
    """The HTTP status code an exception carries, if any."""
    status: object = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response: object = getattr(exc, "response", None)
    if isinstance(response, httpx.Response):
        return response.status_code
    return None


def _message(exc: BaseException) -> str:
    message: object = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    text = redact(_LITELLM_PREFIX.sub("", text)) or type(exc).__name__
    if len(text) > MAX_MESSAGE_CHARS:
        text = f"{text[:MAX_MESSAGE_CHARS]}…[cut: {len(text) - MAX_MESSAGE_CHARS} more characters]"
    return text


def retry_after(exc: BaseException) -> timedelta | None:
    """The delay the provider asked for (`retry-after-ms`, then `retry-after`), if any.

    `retry-after` may be a number of seconds or an HTTP date; a date in the past, a
    negative, non-finite or unparsable value, or one over `MAX_RETRY_AFTER`, is ignored.
    """
    millis = _header(exc, "retry-after-ms")
    if millis is not None:
        delay = _delay(_float(millis), per_second=1000)
        if delay is not None:
            return delay
    header = _header(exc, "retry-after")
    if header is None:
        return None
    seconds = _float(header)
    return _delay(seconds if seconds is not None else _seconds_until(header), per_second=1)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _delay(value: float | None, *, per_second: int) -> timedelta | None:
    if value is None or not math.isfinite(value) or value < 0:
        return None
    seconds = value / per_second
    return timedelta(seconds=seconds) if seconds <= MAX_RETRY_AFTER.total_seconds() else None


def _seconds_until(http_date: str) -> float | None:
    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _header(exc: BaseException, name: str) -> str | None:
    """A response header of the exception, looked up case-insensitively in every place litellm puts them."""
    response: object = getattr(exc, "response", None)
    sources: list[object] = [
        getattr(response, "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ]
    for source in sources:
        if not isinstance(source, Mapping):
            continue
        for key, value in cast(Mapping[object, object], source).items():
            if str(key).lower() == name:
                return str(value).strip()
    return None
