"""The snapshot activities: sign a conversation lane into a token, and verify one back.

Signing happens in activities, not in the workflow, because the secret lives in
the worker's environment (`SECRET_ENV`) and must never enter workflow history;
reading the clock here also keeps the workflow deterministic.

Every refusal is a non-retryable `ApplicationError` whose `type` is the
`SnapshotError` code: retrying cannot fix a bad token or a missing secret, and
the code lets the caller tell the user exactly what went wrong. Neither the
token nor the secret is ever logged or put in an error message.
"""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.snapshots.snapshot_token import SECRET_ENV, SnapshotError, check_secret, decode, encode
from contracts.activities import EXPORT_SNAPSHOT_ACTIVITY, RESTORE_SNAPSHOT_ACTIVITY
from contracts.session import ExportResult
from contracts.snapshot import ExportSnapshotRequest, RestoreSnapshotRequest, SnapshotPayload

INVALID_TTL = "snapshot_invalid_ttl"
"""Error type for a `ttl_s` that is not a positive, representable number of seconds."""


@activity.defn(name=EXPORT_SNAPSHOT_ACTIVITY)
async def export_snapshot(request: ExportSnapshotRequest) -> ExportResult:
    """Sign the lane's context into a snapshot token, expiring after `ttl_s` seconds if given.

    Raises:
        ApplicationError: Non-retryable, typed with the `SnapshotError` code when
            the secret is missing or insecure, or `INVALID_TTL` when `ttl_s` is
            zero, negative or not finite (a zero lifetime must not mean "forever").
    """
    try:
        secret = check_secret(os.environ.get(SECRET_ENV))
    except SnapshotError as exc:
        raise _refusal(exc) from None
    now = datetime.now(UTC)
    expires_at = _expiry(now, request.ttl_s)
    payload = SnapshotPayload(
        agent_id=request.agent_id,
        context_ref=request.context_ref,
        context=request.context,
        exported_at=now,
        expires_at=expires_at,
    )
    token = encode(payload, secret)
    activity.logger.info(
        "exported snapshot of agent %r lane %r: %d messages, expires %s",
        request.agent_id,
        request.context_ref,
        len(request.context.messages),
        expires_at.isoformat() if expires_at else "never",
    )
    return ExportResult(token=token, expires_at=expires_at)


@activity.defn(name=RESTORE_SNAPSHOT_ACTIVITY)
async def restore_snapshot(request: RestoreSnapshotRequest) -> SnapshotPayload:
    """Verify a snapshot token against the worker's secret and return what it carries.

    Raises:
        ApplicationError: Non-retryable, typed with the `SnapshotError` code of the
            first check that failed (secret, then the token checks of `decode`).
    """
    try:
        secret = check_secret(os.environ.get(SECRET_ENV))
        payload = decode(request.token, secret, datetime.now(UTC))
    except SnapshotError as exc:
        raise _refusal(exc) from None
    activity.logger.info(
        "restored snapshot of agent %r lane %r: %d messages",
        payload.agent_id,
        payload.context_ref,
        len(payload.context.messages),
    )
    return payload


def _expiry(now: datetime, ttl_s: float | None) -> datetime | None:
    """`now + ttl_s`, or None without a ttl; refuses lifetimes that cannot be honoured."""
    if ttl_s is None:
        return None
    if not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ApplicationError(
            f"the snapshot lifetime must be a positive number of seconds, not {ttl_s}",
            type=INVALID_TTL,
            non_retryable=True,
        )
    try:
        return now + timedelta(seconds=ttl_s)
    except OverflowError:
        raise ApplicationError(
            f"the snapshot lifetime of {ttl_s} seconds is too long; omit it for a token that never expires",
            type=INVALID_TTL,
            non_retryable=True,
        ) from None


def _refusal(exc: SnapshotError) -> ApplicationError:
    """The non-retryable activity error for a refused secret or token.

    Raised ``from None`` by the callers: the `SnapshotError` cause adds nothing
    for the caller, and its chained causes (e.g. a JSON error) could quote
    payload text.
    """
    return ApplicationError(exc.message, type=exc.code, non_retryable=True)
