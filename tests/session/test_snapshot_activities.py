"""The snapshot activities, run for real in the SDK's `ActivityEnvironment`."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.snapshots.snapshot import INVALID_TTL, export_snapshot, restore_snapshot
from activities.snapshots.snapshot_token import SECRET_ENV
from contracts.snapshot import ExportSnapshotRequest, RestoreSnapshotRequest, SnapshotPayload
from conversation import Context, Message, ToolCall

SECRET = "Vq3-activity-test-secret-9f8e7d6c5b4a3928"

CONTEXT = Context(
    system_prompt="You are terse.",
    messages=[
        Message(role="user", content="What is 6*7?"),
        Message(role="assistant", tool_calls=[ToolCall(id="t1", name="calculator", arguments='{"x":"6*7"}')]),
        Message(role="tool", content="42", tool_call_id="t1", name="calculator"),
        Message(role="assistant", content="42"),
    ],
)


def _request(ttl_s: float | None = None) -> ExportSnapshotRequest:
    return ExportSnapshotRequest(agent_id="agent-7", context_ref="side", context=CONTEXT, ttl_s=ttl_s)


async def _export(ttl_s: float | None = None) -> str:
    result = await ActivityEnvironment().run(export_snapshot, _request(ttl_s))
    return result.token


async def _restore(token: str) -> SnapshotPayload:
    return await ActivityEnvironment().run(restore_snapshot, RestoreSnapshotRequest(token=token))


async def _export_refusal() -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        await _export()
    assert info.value.non_retryable
    return info.value


async def _restore_refusal(token: str) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        await _restore(token)
    assert info.value.non_retryable
    return info.value


@pytest.fixture(autouse=True)
def worker_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)


async def test_export_then_restore_gives_the_same_context(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    before = datetime.now(UTC)
    result = await ActivityEnvironment().run(export_snapshot, _request())
    assert result.expires_at is None
    assert result.token.startswith("rt2.")
    assert SECRET not in result.token

    payload = await _restore(result.token)

    assert payload.context == CONTEXT
    assert (payload.agent_id, payload.context_ref, payload.version) == ("agent-7", "side", 2)
    assert before <= payload.exported_at <= datetime.now(UTC)
    assert payload.expires_at is None
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "agent-7" in logged
    assert SECRET not in logged
    assert result.token not in logged


async def test_export_with_ttl_sets_the_expiry() -> None:
    before = datetime.now(UTC)
    result = await ActivityEnvironment().run(export_snapshot, _request(ttl_s=3600))
    assert result.expires_at is not None
    assert before + timedelta(hours=1) <= result.expires_at <= datetime.now(UTC) + timedelta(hours=1)
    payload = await _restore(result.token)
    assert payload.expires_at == result.expires_at


@pytest.mark.parametrize("ttl_s", [0, -5, float("nan"), float("inf"), 1e300])
async def test_export_refuses_a_lifetime_it_cannot_honour(ttl_s: float) -> None:
    with pytest.raises(ApplicationError) as info:
        await ActivityEnvironment().run(export_snapshot, _request(ttl_s=ttl_s))
    assert info.value.type == INVALID_TTL
    assert info.value.non_retryable


async def test_expired_token_is_refused() -> None:
    token = await _export(ttl_s=0.001)
    await asyncio.sleep(0.02)
    error = await _restore_refusal(token)
    assert error.type == "snapshot_expired"


@pytest.mark.parametrize("activity_name", ["export", "restore"])
async def test_missing_secret_is_a_non_retryable_error(
    monkeypatch: pytest.MonkeyPatch, activity_name: str
) -> None:
    token = await _export()
    monkeypatch.delenv(SECRET_ENV)
    error = await (_restore_refusal(token) if activity_name == "restore" else _export_refusal())
    assert error.type == "snapshot_secret_missing"
    assert SECRET_ENV in error.message


async def test_placeholder_secret_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "changeme")
    error = await _export_refusal()
    assert error.type == "snapshot_secret_insecure"
    assert "changeme" not in error.message


async def test_tampered_token_is_refused_by_signature() -> None:
    token = await _export()
    prefix_and_body, signature = token.rsplit(".", 1)
    flipped = ("B" if signature[0] == "A" else "A") + signature[1:]
    error = await _restore_refusal(f"{prefix_and_body}.{flipped}")
    assert error.type == "snapshot_signature"
    assert token not in error.message


async def test_token_from_another_worker_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    token = await _export()
    monkeypatch.setenv(SECRET_ENV, "another-worker-secret-with-enough-length-0001")
    error = await _restore_refusal(token)
    assert error.type == "snapshot_signature"


async def test_malformed_token_is_refused_without_retry() -> None:
    error = await _restore_refusal("hello")
    assert error.type == "snapshot_prefix"
