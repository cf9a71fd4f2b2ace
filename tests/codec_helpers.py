"""Keys and payloads shared by the payload-encryption tests."""

from __future__ import annotations

import base64
import json

from temporalio.api.common.v1 import Payload

from settings.deployment import EncryptionKey

K1 = EncryptionKey("k1", b"\x01" * 32)
K2 = EncryptionKey("k2", b"\x02" * 32)


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


def entry(key: EncryptionKey) -> str:
    return f"{key.key_id}:{base64.b64encode(key.material).decode()}"
