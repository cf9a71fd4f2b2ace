"""Snapshot tokens: the documented wire format, each refusal code, and the order of the checks."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.snapshots.snapshot_token import SECRET_ENV, SnapshotError, check_secret, decode, encode
from contracts.snapshot import SNAPSHOT_PREFIX, SNAPSHOT_VERSION, SnapshotPayload
from conversation import Context, Message, ToolCall

SECRET = "k" * 20 + "-test-secret-0123456789"
OTHER_SECRET = "z" * 48
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def _payload(expires_at: datetime | None = None) -> SnapshotPayload:
    context = Context(
        system_prompt="Be brief.",
        messages=[
            Message(role="user", content="2+2? ünïcødé"),
            Message(role="assistant", tool_calls=[ToolCall(id="c1", name="calc", arguments='{"e":"2+2"}')]),
            Message(role="tool", content="4", tool_call_id="c1", name="calc"),
        ],
    )
    return SnapshotPayload(
        agent_id="agent-1",
        context_ref="main",
        context=context,
        exported_at=NOW - timedelta(minutes=5),
        expires_at=expires_at,
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signed(data: Any, secret: str = SECRET, *, raw: bytes | None = None) -> str:
    """A token built independently of the module, per the documented format."""
    body = _b64(raw if raw is not None else json.dumps(data).encode())
    signature = hmac.new(secret.encode(), (SNAPSHOT_PREFIX + body).encode(), hashlib.sha256).digest()
    return f"{SNAPSHOT_PREFIX}{body}.{_b64(signature)}"


def _data(**changes: Any) -> dict[str, Any]:
    data = _payload().model_dump(mode="json")
    data.update(changes)
    return data


def _code(token: str, secret: str = SECRET) -> str:
    with pytest.raises(SnapshotError) as info:
        decode(token, secret, NOW)
    assert info.value.message == str(info.value)
    assert SECRET not in info.value.message
    return info.value.code


# ---- round trip and format ----


@pytest.mark.parametrize("expires_at", [None, NOW + timedelta(seconds=1)])
def test_round_trip(expires_at: datetime | None) -> None:
    payload = _payload(expires_at)
    token = encode(payload, SECRET)
    assert decode(token, SECRET, NOW) == payload


def test_token_matches_the_documented_format() -> None:
    payload = _payload(NOW + timedelta(hours=1))
    token = encode(payload, SECRET)
    assert token.startswith("rt2.")
    body, signature = token.removeprefix("rt2.").split(".")
    assert "=" not in token
    canonical = json.dumps(
        payload.model_dump(mode="json"), separators=(",", ":"), sort_keys=True, ensure_ascii=False
    ).encode()
    assert base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)) == canonical
    assert token == _signed(None, raw=canonical)
    assert len(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))) == 32


def test_encoding_is_stable() -> None:
    assert encode(_payload(), SECRET) == encode(_payload(), SECRET)
    assert encode(_payload(), SECRET) != encode(_payload(), OTHER_SECRET)


def test_secret_is_not_in_the_token() -> None:
    token = encode(_payload(), SECRET)
    assert SECRET not in token
    assert _b64(SECRET.encode()) not in token


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        decode(encode(_payload(), SECRET), SECRET, NOW.replace(tzinfo=None))


# ---- each refusal, hit exactly ----


def test_wrong_prefix() -> None:
    token = encode(_payload(), SECRET)
    assert _code("rt1." + token.removeprefix("rt2.")) == "snapshot_prefix"
    assert _code("") == "snapshot_prefix"
    assert _code("RT2." + token.removeprefix("rt2.")) == "snapshot_prefix"


@pytest.mark.parametrize("tail", ["onlyonepart", "a.b.c", ".sig", "body.", ".", ""])
def test_bad_format(tail: str) -> None:
    assert _code(SNAPSHOT_PREFIX + tail) == "snapshot_format"


def _mangle(case: str, body: str, sig: str) -> tuple[str, str]:
    """A valid token's two parts, broken in one way that only the encoding check catches."""
    if case == "padding":
        return body + "==", sig
    if case == "standard alphabet":
        return "+" + body[1:], sig
    if case == "not base64":
        return body, sig[:-1] + "!"
    if case == "impossible length 4n+1":
        return body, sig + "A" * (5 - len(sig) % 4)
    return "QR", sig  # non-canonical trailing bits: "QQ" is the one encoding of b"A"


@pytest.mark.parametrize(
    "case", ["padding", "standard alphabet", "not base64", "impossible length 4n+1", "non-canonical bits"]
)
def test_bad_encoding(case: str) -> None:
    body, sig = encode(_payload(), SECRET).removeprefix(SNAPSHOT_PREFIX).split(".")
    new_body, new_sig = _mangle(case, body, sig)
    if case == "impossible length 4n+1":
        assert len(new_sig) % 4 == 1  # no byte string encodes to this length
    assert _code(f"{SNAPSHOT_PREFIX}{new_body}.{new_sig}") == "snapshot_encoding"


def test_tampered_payload_fails_the_signature() -> None:
    token = encode(_payload(), SECRET)
    forged_body = _signed(_data(agent_id="someone-else")).split(".")[1]
    signature = token.split(".")[2]
    assert _code(f"{SNAPSHOT_PREFIX}{forged_body}.{signature}") == "snapshot_signature"


def test_other_secret_fails_the_signature() -> None:
    assert _code(encode(_payload(), OTHER_SECRET)) == "snapshot_signature"


@pytest.mark.parametrize(
    "token",
    [
        _signed(None, raw=b"not json"),
        _signed(None, raw=b"\xff\xfe"),
        _signed([1, 2, 3]),
        _signed("a string"),
        _signed({"version": 2}),
        _signed(_data(context={"messages": [{"role": "robot"}]})),
        _signed(_data(exported_at="yesterday")),
        _signed(_data(exported_at="2025-06-01T11:00:00")),  # no timezone
    ],
)
def test_bad_payload(token: str) -> None:
    assert _code(token) == "snapshot_payload"


@pytest.mark.parametrize("version", [1, 3])
def test_version_mismatch(version: int) -> None:
    with pytest.raises(SnapshotError) as info:
        decode(_signed(_data(version=version)), SECRET, NOW)
    assert info.value.code == "snapshot_version"
    assert f"version {version}" in info.value.message


def test_missing_version_is_a_version_mismatch() -> None:
    data = _data()
    del data["version"]
    assert _code(_signed(data)) == "snapshot_version"


@pytest.mark.parametrize("expires_at", [NOW, NOW - timedelta(days=1)])
def test_expired(expires_at: datetime) -> None:
    assert _code(encode(_payload(expires_at), SECRET)) == "snapshot_expired"


def test_legacy_thread() -> None:
    assert _code(_signed(_data(thread=[{"seq": 0, "kind": "user"}]))) == "snapshot_legacy_thread"


# ---- order: the earlier check wins ----


def test_prefix_before_format() -> None:
    assert _code("rt1.a.b.c") == "snapshot_prefix"


def test_format_before_encoding() -> None:
    assert _code(f"{SNAPSHOT_PREFIX}!!!.???.***") == "snapshot_format"


def test_encoding_before_signature() -> None:
    body = encode(_payload(), SECRET).split(".")[1]
    assert _code(f"{SNAPSHOT_PREFIX}{body}.not*base64") == "snapshot_encoding"


def test_signature_before_payload() -> None:
    assert _code(_signed(None, OTHER_SECRET, raw=b"not json")) == "snapshot_signature"


def test_signature_before_expiry() -> None:
    assert _code(encode(_payload(NOW - timedelta(days=1)), OTHER_SECRET)) == "snapshot_signature"


def test_payload_before_version() -> None:
    assert _code(_signed(_data(version=1, agent_id=None))) == "snapshot_payload"


def test_version_before_expiry() -> None:
    expired = (NOW - timedelta(days=1)).isoformat()
    assert _code(_signed(_data(version=1, expires_at=expired))) == "snapshot_version"


def test_version_before_legacy_thread() -> None:
    assert _code(_signed(_data(version=1, thread=[]))) == "snapshot_version"


def test_expiry_before_legacy_thread() -> None:
    expired = (NOW - timedelta(days=1)).isoformat()
    assert _code(_signed(_data(expires_at=expired, thread=[]))) == "snapshot_expired"


# ---- the secret ----


@pytest.mark.parametrize("secret", [None, "", "   \n"])
def test_secret_missing(secret: str | None) -> None:
    with pytest.raises(SnapshotError) as info:
        check_secret(secret)
    assert info.value.code == "snapshot_secret_missing"
    assert SECRET_ENV in info.value.message
    assert "secrets.token_urlsafe(48)" in info.value.message


@pytest.mark.parametrize(
    "secret",
    [
        "secret",
        "CHANGEME",
        "change-me",
        "Default",
        "password",
        "dev",
        "test",
        "example",
        "your-secret-here",
        " secret ",
    ],
)
def test_secret_placeholder_is_insecure(secret: str) -> None:
    with pytest.raises(SnapshotError) as info:
        check_secret(secret)
    assert info.value.code == "snapshot_secret_insecure"
    assert "placeholder" in info.value.message
    assert SECRET_ENV in info.value.message


def test_short_secret_is_insecure() -> None:
    with pytest.raises(SnapshotError) as info:
        check_secret("x" * 31)
    assert info.value.code == "snapshot_secret_insecure"
    assert "31 characters" in info.value.message
    assert "secrets.token_urlsafe(48)" in info.value.message


def test_good_secret_is_returned_stripped() -> None:
    assert check_secret("x" * 32) == "x" * 32
    assert check_secret(f"  {SECRET}\n") == SECRET


def test_version_constant_matches_prefix() -> None:
    assert SNAPSHOT_VERSION == 2
    assert SNAPSHOT_PREFIX == f"rt{SNAPSHOT_VERSION}."
