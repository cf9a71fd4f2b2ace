"""Secrets never leave the worker: redact credentials from error text and log records.

Providers and gateways sometimes echo a request's `Authorization` header or API key
in their error messages. Anything the worker turns into an `ApplicationError` (whose
message, details and cause chain Temporal writes into workflow history), a tool
error the model reads, or a log line goes through `redact` first.

`redact` replaces with `REDACTED`:

* the value of every credential-looking environment variable of this process (a
  name with a segment such as `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `CREDENTIALS`;
  see `SECRET_NAME_WORDS`) whose value has at least `MIN_SECRET_CHARS` characters;
* `Bearer <token>`, the value of `Authorization`/`api-key`/`x-api-key` headers, and
  the password of a `scheme://user:password@host` URL;
* strings shaped like well-known keys: `sk-...` (OpenAI, Anthropic), `ghp_...`,
  `xoxb-...`, `AKIA...`, `AIza...`, `hf_...`.

`RedactingFilter` applies it to log records (message and formatted traceback);
`install_log_redaction` puts one on every handler of a logger (the root by default).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import cast

from pydantic import JsonValue

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8
"""Shorter environment values are left alone: they would match ordinary words."""

SECRET_NAME_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "APIKEY",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "COOKIE",
    }
)
"""An environment variable whose name has one of these `_`-separated words holds a secret."""

_TOKEN_CHARS = r"[A-Za-z0-9\-._~+/]"
_PATTERNS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # A header echoed as `Authorization: Bearer xyz`, `"api-key": "xyz"`, `x-api-key=xyz`.
    (
        re.compile(
            r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]key|x-goog-api-key)"
            r"([\"']?\s*[:=]\s*[\"']?)"
            r"(?!(?:(?:bearer|basic|token)\s+)?" + re.escape(REDACTED) + ")"  # already redacted
            r"(?:(bearer|basic|token)\s+)?[^\s\"',;}\]]+"
        ),
        lambda m: f"{m[1]}{m[2]}{m[3] + ' ' if m[3] else ''}{REDACTED}",
    ),
    (re.compile(rf"(?i)\bbearer\s+{_TOKEN_CHARS}+=*"), f"Bearer {REDACTED}"),
    # Bounded repeats keep every pattern linear: `redact` also runs on long tracebacks.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://[^\s:/@]{1,256}:)[^\s@/]{1,1024}@"), rf"\1{REDACTED}@"),
    (re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),
)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return any(word in SECRET_NAME_WORDS for word in re.split(r"[_\-.]", name.upper()))


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values to redact from `environ` (default: this process's), longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if len(v) >= MIN_SECRET_CHARS and is_secret_name(k)}
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


@lru_cache(maxsize=8)
def _values_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    if not values:
        return None
    return re.compile("|".join(re.escape(v) for v in values))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every credential replaced by `REDACTED` (see the module docstring).

    The environment is read on every call, so a key set after start-up (or by a test)
    is covered too.
    """
    if not text:
        return text
    pattern = _values_pattern(secret_values(environ))
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for shape, replacement in _PATTERNS:
        text = shape.sub(replacement, text)
    return text


def redact_json(value: JsonValue) -> JsonValue:
    """A copy of JSON data with `redact` applied to every string (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {redact(key): redact_json(item) for key, item in value.items()}
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message, traceback and stack before any handler formats it.

    The record's arguments are merged into its message (`record.args` becomes None) and
    its exception is formatted into `record.exc_text` (`record.exc_info` becomes None),
    so no handler can format the original, unredacted text again.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact `record` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # bad %-arguments: keep what can be shown
            message = f"{record.msg!s} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def install_log_redaction(logger: logging.Logger | None = None) -> RedactingFilter:
    """Put the redacting filter on every handler of `logger` (default: the root logger).

    Filters on a handler see every record the handler emits, including those propagated
    from child loggers (a filter on the logger itself would not). Idempotent; handlers
    added later are not covered, so call it after logging is configured.

    Returns:
        The filter (shared by all handlers).
    """
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in cast(list[object], handler.filters)):
            handler.addFilter(_FILTER)
    return _FILTER
