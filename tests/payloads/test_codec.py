"""Payload encryption: the AES-GCM codec and its key settings (a whole encrypted run: `test_codec_run.py`)."""

from __future__ import annotations

import base64

import pytest
from temporalio.api.common.v1 import Payload

from hosting.data_converter import build_data_converter
from payloads.codec import ENCODING, KEY_ID_METADATA, AesGcmCodec, PayloadDecryptionError
from settings.deployment import EncryptionKey, Settings, load_settings
from settings.env_values import SettingsError
from tests.codec_helpers import K1, K2, entry, plain

# ---- the codec ----------------------------------------------------------------------------------


async def test_encrypts_with_the_first_key_and_round_trips() -> None:
    codec = AesGcmCodec([K1])
    [sealed] = await codec.encode([plain("the secret answer")])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID_METADATA] == b"k1"
    assert b"secret" not in sealed.SerializeToString()
    [again] = await codec.encode([plain("the secret answer")])
    assert again.data != sealed.data, "a fresh nonce every time"
    assert await codec.decode([sealed]) == [plain("the secret answer")]


async def test_rotation_reads_old_keys_and_writes_with_the_new_one() -> None:
    [old] = await AesGcmCodec([K1]).encode([plain("written before rotation")])
    rotated = AesGcmCodec([K2, K1])
    assert await rotated.decode([old]) == [plain("written before rotation")]
    [new] = await rotated.encode([plain("after")])
    assert new.metadata[KEY_ID_METADATA] == b"k2"
    with pytest.raises(PayloadDecryptionError, match=r"key id 'k2'.*holds: k1.*add that key"):
        await AesGcmCodec([K1]).decode([new])


async def test_tampering_a_wrong_key_and_a_swapped_key_id_are_refused() -> None:
    [sealed] = await AesGcmCodec([K1]).encode([plain("x")])
    tampered = Payload(metadata=sealed.metadata, data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([K1]).decode([tampered])
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([EncryptionKey("k1", b"\x09" * 32)]).decode([sealed])
    relabelled = Payload(metadata={**sealed.metadata, KEY_ID_METADATA: b"k2"}, data=sealed.data)
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([K2, EncryptionKey("k1", K2.material)]).decode([relabelled])
    with pytest.raises(PayloadDecryptionError, match="truncated"):
        await AesGcmCodec([K1]).decode([Payload(metadata=sealed.metadata, data=b"short")])


async def test_unencrypted_payloads_pass_through_decode() -> None:
    assert await AesGcmCodec([K1]).decode([plain("old")]) == [plain("old")]


def test_key_settings_parse_and_rotation_order() -> None:
    urlsafe = "k3:" + base64.urlsafe_b64encode(b"\xfb" * 32).decode()
    settings = load_settings({"REACT_ENCRYPTION_KEYS": f" {entry(K2)} , {entry(K1)},{urlsafe}"})
    assert [k.key_id for k in settings.encryption_keys] == ["k2", "k1", "k3"]
    assert settings.encryption_keys[2].material == b"\xfb" * 32
    assert settings.encryption_on and settings.codec_endpoint == "http://localhost:8081"
    assert not load_settings({}).encryption_on and load_settings({}).codec_endpoint is None
    assert "material" not in repr(settings.encryption_keys[0])


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("AAAA", "entry 1 is not <id>:<base64 key>"),
        (f"{entry(K1)},bad id:AAAA", "entry 2 is not"),
        (f"{entry(K1)},{entry(K1)}", "'k1' appears twice"),
        ("k1:not*base64!", "'k1' is not valid base64"),
        ("k1:" + base64.b64encode(b"\x05" * 16).decode(), "is 16 bytes; AES-256 needs 32"),
    ],
)
def test_bad_keys_are_one_line_that_never_shows_key_material(value: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"REACT_ENCRYPTION_KEYS": value})
    message = str(caught.value)
    assert message.startswith("REACT_ENCRYPTION_KEYS: ") and fragment in message
    assert base64.b64encode(K1.material).decode() not in message and "BQUF" not in message


def test_settings_without_keys_keep_payloads_plain() -> None:
    assert build_data_converter(Settings()).payload_codec is None
