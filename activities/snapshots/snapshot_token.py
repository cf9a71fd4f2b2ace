"""Signed snapshot tokens: a conversation lane packed into a portable, tamper-evident string.

A token is ``rt2.<payload>.<signature>`` where ``<payload>`` is the unpadded
URL-safe base64 of the payload's JSON and ``<signature>`` the unpadded URL-safe
base64 of ``HMAC-SHA256(secret, signing_input)``. The signing input is the ASCII
text ``"rt2." + <payload>``, i.e. everything before the last dot: the prefix is
signed too, so a payload cannot be replayed under another format's prefix, and
the signature covers exactly the bytes the reader sees (no re-serialization).

The payload JSON is ``SnapshotPayload.model_dump(mode="json")`` written compact
and key-sorted, so one payload always gives one token.

This module is pure: no environment, no clock. The secret and the current time
are parameters, so the activities own the I/O and the tests own the time.
`decode` checks a token in a fixed order and raises a `SnapshotError` whose
`code` names the first check that failed; callers and users can rely on that.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from datetime import datetime
from typing import Any, cast

from pydantic import ValidationError

from contracts.errors import SnapshotErrorCode
from contracts.snapshot import SNAPSHOT_PREFIX, SNAPSHOT_VERSION, SnapshotPayload

SECRET_ENV = "REACT_SNAPSHOT_SECRET"
"""The worker's environment variable that holds the signing secret."""

MIN_SECRET_CHARS = 32
"""Shortest secret accepted: shorter ones are guessable enough to forge tokens."""

INSECURE_SECRETS = frozenset(
    {
        "secret",
        "changeme",
        "change-me",
        "change_me",
        "default",
        "password",
        "dev",
        "test",
        "example",
        "your-secret-here",
        "your_secret_here",
        "snapshot-secret",
        "react_snapshot_secret",
    }
)
"""Placeholders copied from docs and examples (compared case-insensitively): never a real secret."""

_SECRET_HOWTO = (
    f"set {SECRET_ENV} in the worker's environment to a random value of at least "
    f"{MIN_SECRET_CHARS} characters, e.g. the output of "
    '`python -c "import secrets; print(secrets.token_urlsafe(48))"`'
)
_B64URL = re.compile(r"[A-Za-z0-9_-]+")


class SnapshotError(Exception):
    """A snapshot token (or the secret) was refused; `code` says which check failed.

    The message is meant for the person holding the token, and never contains the
    token or the secret.
    """

    def __init__(self, code: SnapshotErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: SnapshotErrorCode = code
        self.message = message


def check_secret(secret: str | None) -> str:
    """The signing secret, stripped, if it is safe to sign with.

    A missing or placeholder secret is refused rather than used: tokens signed
    with a guessable secret could be forged by anyone, and silently falling back
    to a default would hide that until it is exploited.

    Raises:
        SnapshotError: ``snapshot_secret_missing`` if the secret is None or blank;
            ``snapshot_secret_insecure`` if it is a known placeholder or shorter
            than `MIN_SECRET_CHARS`.
    """
    if secret is None or not secret.strip():
        raise SnapshotError(
            "snapshot_secret_missing",
            f"no snapshot signing secret is configured: {_SECRET_HOWTO}",
        )
    secret = secret.strip()
    if secret.lower() in INSECURE_SECRETS:
        raise SnapshotError(
            "snapshot_secret_insecure",
            f"the snapshot signing secret in {SECRET_ENV} is a well-known placeholder and would let "
            f"anyone forge snapshots: {_SECRET_HOWTO}",
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise SnapshotError(
            "snapshot_secret_insecure",
            f"the snapshot signing secret in {SECRET_ENV} is only {len(secret)} characters long, "
            f"too short to be safe: {_SECRET_HOWTO}",
        )
    return secret


def encode(payload: SnapshotPayload, secret: str) -> str:
    """Sign `payload` with `secret` and return the token (see the module docstring for the format)."""
    data = payload.model_dump(mode="json")
    text = json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    signing_input = SNAPSHOT_PREFIX + _b64encode(text.encode("utf-8"))
    return signing_input + "." + _b64encode(_sign(signing_input, secret))


def decode(token: str, secret: str, now: datetime) -> SnapshotPayload:
    """Verify `token` and return its payload.

    Checks run in this order and the first failure wins: prefix, format,
    encoding, signature, payload, version, expiry, legacy ``thread`` key. The
    signature is checked before the payload is parsed, so nothing unsigned is
    ever interpreted; the version and ``thread`` checks come after the shape
    check so that an old but authentic token gets a precise explanation.

    Args:
        token: The snapshot token.
        secret: The signing secret (already vetted by `check_secret`).
        now: The current time, timezone-aware; a token expires when ``expires_at <= now``.

    Raises:
        SnapshotError: With the code of the first failed check.
        ValueError: `now` is naive (a programming error, not a bad token).
    """
    if now.tzinfo is None:
        raise ValueError("decode needs a timezone-aware `now`")
    if not token.startswith(SNAPSHOT_PREFIX):
        raise SnapshotError(
            "snapshot_prefix",
            f"this is not a snapshot token of the current format: it should start with "
            f"{SNAPSHOT_PREFIX!r}; check that the whole token was copied",
        )
    parts = token[len(SNAPSHOT_PREFIX) :].split(".")
    if len(parts) != 2 or not all(parts):
        raise SnapshotError(
            "snapshot_format",
            f"the snapshot token is malformed: after {SNAPSHOT_PREFIX!r} it should have two parts "
            "separated by one dot; it may have been truncated or altered",
        )
    encoded_payload, encoded_signature = parts
    raw_payload = _b64decode(encoded_payload)
    signature = _b64decode(encoded_signature)
    if raw_payload is None or signature is None:
        raise SnapshotError(
            "snapshot_encoding",
            "the snapshot token contains characters that are not valid URL-safe base64; "
            "it may have been altered while copying",
        )
    if not hmac.compare_digest(signature, _sign(SNAPSHOT_PREFIX + encoded_payload, secret)):
        raise SnapshotError(
            "snapshot_signature",
            "the snapshot token's signature does not match: it was altered, or it was exported "
            "by a worker with a different signing secret",
        )
    raw = _payload_object(raw_payload)
    payload = _validate_shape(raw)
    if raw.get("version") != SNAPSHOT_VERSION:
        found = f"format version {raw['version']!r}" if "version" in raw else "no format version"
        raise SnapshotError(
            "snapshot_version",
            f"the snapshot token has {found} but this worker reads only version "
            f"{SNAPSHOT_VERSION}; export the conversation again with a current worker",
        )
    if payload.expires_at is not None and payload.expires_at <= now:
        raise SnapshotError(
            "snapshot_expired",
            f"the snapshot token expired at {payload.expires_at.isoformat()}; export the conversation again",
        )
    if "thread" in raw:
        raise SnapshotError(
            "snapshot_legacy_thread",
            "the snapshot token carries a conversation thread, which the current format no longer "
            "restores (it restores the context only); export the conversation again",
        )
    return payload


def _payload_object(raw_payload: bytes) -> dict[str, Any]:
    """The decoded payload as a JSON object, or a ``snapshot_payload`` error."""
    try:
        value: object = json.loads(raw_payload)
    except (ValueError, RecursionError) as exc:
        raise SnapshotError("snapshot_payload", "the snapshot token's content is not valid JSON") from exc
    if not isinstance(value, dict):
        raise SnapshotError(
            "snapshot_payload",
            f"the snapshot token's content should be a JSON object, not {type(value).__name__}",
        )
    return cast(dict[str, Any], value)


def _validate_shape(raw: dict[str, Any]) -> SnapshotPayload:
    """Validate the fields of a payload, leaving the version and ``thread`` checks to `decode`.

    The ``thread`` key is dropped before validation so that a stricter model
    later (``extra="forbid"``) still reports it as a legacy thread, not as a bad
    payload. A version of another number validates fine (it is an int); `decode`
    then rejects it with its own code.
    """
    fields = {key: value for key, value in raw.items() if key != "thread"}
    try:
        payload = SnapshotPayload.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '(root)'}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False)[:5]
        )
        raise SnapshotError(
            "snapshot_payload", f"the snapshot token's content is not a valid snapshot: {problems}"
        ) from exc
    for name, stamp in (("exported_at", payload.exported_at), ("expires_at", payload.expires_at)):
        if stamp is not None and stamp.tzinfo is None:
            raise SnapshotError(
                "snapshot_payload", f"the snapshot token's {name} has no timezone, so it cannot be trusted"
            )
    return payload


def _sign(signing_input: str, secret: str) -> bytes:
    return hmac.new(secret.encode("utf-8"), signing_input.encode("ascii"), hashlib.sha256).digest()


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes | None:
    """The bytes of unpadded, canonical base64url `text`, or None if it is not that.

    Padding, standard-alphabet characters (``+``, ``/``) and non-canonical
    trailing bits are all refused: one byte string has exactly one encoding, so
    a token cannot be varied without changing the signature's input.
    """
    if not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if _b64encode(data) == text else None
