"""Map provider errors to Temporal `ApplicationError`s: retryable or not, and when to retry.

Provider SDK retries are disabled (`num_retries=0`), so Temporal's retry policy
is the only retry loop; this module decides which failures it may retry. The
rules follow the Temporal OpenAI Agents integration's model activity:

* timeouts, connection errors and status 408, 409, 429 and 5xx are retryable;
* other 4xx (auth, permission, bad request, model not found, context window
  exceeded, content policy) are not: the same request would fail again;
* an `x-should-retry: true|false` response header overrides the status code;
* `retry-after-ms` / `retry-after` (seconds or an HTTP date) become the
  error's `next_retry_delay`, so Temporal waits as long as the provider asked.

Exceptions that carry no status code and are not known timeouts or connection
errors are retryable, as in Temporal's default: litellm already wraps unknown
provider failures as `APIConnectionError`, and anything else reaching here is
more likely a transient fault than a deterministic one. A run's LLM retry
policy bounds the attempts either way.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import cast

import httpx
import openai
from litellm.exceptions import ContentPolicyViolationError, ContextWindowExceededError
from temporalio.exceptions import ApplicationError

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_NON_RETRYABLE = (ContextWindowExceededError, ContentPolicyViolationError)
_TIMEOUTS = (openai.APITimeoutError, httpx.TimeoutException, asyncio.TimeoutError, TimeoutError)
_CONNECTION = (openai.APIConnectionError, httpx.TransportError, ConnectionError)
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+: )+")


def classify(exc: BaseException) -> ApplicationError:
    """The `ApplicationError` to raise from the LLM activity for a provider failure.

    Args:
        exc: What `litellm.acompletion` (or the scripted provider) raised.

    Returns:
        An error whose `type` is a stable readable name (`RateLimitError`,
        `AuthenticationError`, `Timeout`, ...), whose message is the provider's,
        and whose retryability and `next_retry_delay` follow the module's rules.
    """
    if isinstance(exc, ApplicationError):
        return exc
    if _missing_credentials(exc):
        return ApplicationError(
            f"no API key for this model in the worker's environment ({_message(exc)})",
            type="AuthenticationError",
            non_retryable=True,
        )
    retryable = _is_retryable(exc)
    return ApplicationError(
        _message(exc),
        type=_type_name(exc),
        non_retryable=not retryable,
        next_retry_delay=retry_after(exc) if retryable else None,
    )


# litellm reports a missing API key as a 500 from the client library; no retry can fix it.
_MISSING_CREDENTIALS = ("missing credentials", "api_key client option must be set")


def _missing_credentials(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _MISSING_CREDENTIALS)


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, _NON_RETRYABLE):
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


def _type_name(exc: BaseException) -> str:
    if isinstance(exc, _TIMEOUTS):
        return "Timeout"
    if isinstance(exc, httpx.TransportError | ConnectionError):
        return "APIConnectionError"
    return type(exc).__name__


def _message(exc: BaseException) -> str:
    message: object = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    return _LITELLM_PREFIX.sub("", text) or type(exc).__name__


def retry_after(exc: BaseException) -> timedelta | None:
    """The delay the provider asked for (`retry-after-ms`, then `retry-after`), if any.

    `retry-after` may be a number of seconds or an HTTP date; a date in the past,
    a negative or an unparsable value is ignored.
    """
    millis = _header(exc, "retry-after-ms")
    if millis is not None:
        try:
            value = float(millis)
        except ValueError:
            value = -1.0
        if value >= 0:
            return timedelta(milliseconds=value)
    header = _header(exc, "retry-after")
    if header is None:
        return None
    try:
        seconds = float(header)
    except ValueError:
        seconds = _seconds_until(header)
    if seconds is None or seconds < 0:
        return None
    return timedelta(seconds=seconds)


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
