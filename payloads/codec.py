"""Payload encryption: an AES-256-GCM `PayloadCodec` with key ids for rotation.

Each encrypted payload is `nonce (12 bytes) || ciphertext || tag` of the original
payload's serialized bytes, with metadata `encoding: binary/encrypted` and
`encryption-key-id: <id>` (the id is also bound as associated data, so it cannot be
swapped). Encoding uses the first configured key; decoding uses whichever key the
payload names, so a rotation is: put the new key first, keep the old ones after it
until nothing written with them is still read. Payloads that are not encrypted (written
before encryption was switched on) pass through unchanged.

The `DataConverter` applies the codec before the claim check (`hosting.connection`),
so the payload store only ever holds ciphertext too. Blobs written to the store directly
go through `SealedBlobStore` (what `payloads.blob_store.blob_store_from_env` returns when
encryption is on).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from payloads.blob_store_interface import BlobMissingError, BlobStore, check_digest, digest_of
from settings.deployment import EncryptionKey

ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
NONCE_BYTES = 12
ASSOCIATED_DATA_PREFIX = b"durable-react/payload/v1:"
BLOB_KEY_INFO = b"durable-react/sealed-blob/v1"


class PayloadDecryptionError(ValueError):
    """An encrypted payload that the configured keys cannot decrypt; the message says why."""


class AesGcmCodec(PayloadCodec):
    """Encrypts every payload with the first key; decrypts with the key its metadata names."""

    def __init__(self, keys: Sequence[EncryptionKey]) -> None:
        """Use `keys` (at least one; the first encrypts).

        Raises:
            ValueError: no keys, a key that is not 32 bytes, or a repeated key id.
        """
        if not keys:
            raise ValueError("AesGcmCodec needs at least one key")
        ids = [key.key_id for key in keys]
        if len(set(ids)) != len(ids):
            raise ValueError(f"repeated key id among {ids}")
        if any(len(key.material) != 32 for key in keys):
            raise ValueError("AES-256-GCM keys are 32 bytes")
        self._current = keys[0].key_id
        self._ciphers = {key.key_id: AESGCM(key.material) for key in keys}

    @property
    def current_key_id(self) -> str:
        """The id of the key new payloads are encrypted with."""
        return self._current

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload with the current key."""
        return [self.encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload; others pass through.

        Raises:
            PayloadDecryptionError: an unknown key id, or a payload that fails authentication.
        """
        return [self.decrypt(payload) for payload in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        """One payload, encrypted with the current key."""
        nonce = os.urandom(NONCE_BYTES)
        plain = payload.SerializeToString(deterministic=True)
        sealed = self._ciphers[self._current].encrypt(nonce, plain, _associated_data(self._current))
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID_METADATA: self._current.encode()},
            data=nonce + sealed,
        )

    def decrypt(self, payload: Payload) -> Payload:
        """One payload, decrypted (returned as is when it is not encrypted)."""
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            known = ", ".join(self._ciphers)
            raise PayloadDecryptionError(
                f"payload encrypted with key id {key_id!r}, which REACT_ENCRYPTION_KEYS does not hold "
                f"(it holds: {known}); add that key after the current one to read it"
            )
        if len(payload.data) < NONCE_BYTES + 16:
            raise PayloadDecryptionError(f"payload encrypted with key id {key_id!r} is truncated")
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, _associated_data(key_id))
        except InvalidTag:
            raise PayloadDecryptionError(
                f"payload encrypted with key id {key_id!r} does not decrypt: the key stored under "
                f"{key_id!r} in REACT_ENCRYPTION_KEYS is not the one that encrypted it, or the payload "
                "was altered"
            ) from None
        decrypted = Payload()
        decrypted.ParseFromString(plain)
        return decrypted


def _associated_data(key_id: str) -> bytes:
    return ASSOCIATED_DATA_PREFIX + key_id.encode()


def new_key_entry(key_id: str = "k1") -> str:
    """A fresh `id:base64key` entry for `REACT_ENCRYPTION_KEYS` (32 random bytes)."""
    return f"{key_id}:{base64.b64encode(os.urandom(32)).decode()}"


class _BlobKey:
    """One key's subkeys for sealed blobs (HKDF): one names blobs, one encrypts them."""

    def __init__(self, key: EncryptionKey) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=BLOB_KEY_INFO).derive(
            key.material
        )
        self._address_key, self._cipher = derived[:32], AESGCM(derived[32:])

    def name_of(self, digest: str) -> str:
        return hmac.new(self._address_key, digest.encode(), hashlib.sha256).hexdigest()

    def seal(self, data: bytes, digest: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._cipher.encrypt(nonce, data, digest.encode())

    def open(self, sealed: bytes, digest: str) -> bytes | None:
        try:
            return self._cipher.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], digest.encode())
        except (InvalidTag, ValueError):
            return None


class SealedBlobStore(BlobStore):
    """A `BlobStore` that encrypts: the same API and plaintext digests, only ciphertext in the store.

    For blobs written directly (the LLM activity's message cache, archived thread segments)
    when encryption is on; claim-checked payloads are encrypted by the codec instead. The
    blob with digest D is stored in the inner store's sealed area under HMAC-SHA256(D) with
    a key-derived secret, so the store neither shows nor lets anyone confirm what it holds,
    encrypted with AES-256-GCM (D as associated data). Writes use the first key; reads try
    each key, so rotation works as for payloads.
    """

    def __init__(self, inner: BlobStore, keys: Sequence[EncryptionKey]) -> None:
        """Encrypt into `inner` with `keys` (at least one; the first writes)."""
        if not keys:
            raise ValueError("SealedBlobStore needs at least one key")
        self.inner = inner
        self._keys = [_BlobKey(key) for key in keys]

    def describe(self) -> str:
        """The inner store, marked encrypted."""
        return f"{self.inner.describe()} (encrypted)"

    async def put(self, data: bytes, *, durable: bool = True) -> str:
        """Encrypt with the current key and store; returns the plaintext's digest."""
        digest = digest_of(data)
        key = self._keys[0]
        name = key.name_of(digest)
        if not await self.inner.has_sealed(name):
            await self.inner.put_sealed(name, key.seal(data, digest), durable=durable)
        return digest

    async def get(self, digest: str) -> bytes:
        """Find, decrypt and verify the blob."""
        check_digest(digest)
        for key in self._keys:
            sealed = await self.inner.get_sealed(key.name_of(digest))
            if sealed is None:
                continue
            data = key.open(sealed, digest)
            if data is None or digest_of(data) != digest:
                raise BlobMissingError(digest, self.describe(), "stored bytes do not decrypt to the digest")
            return data
        raise BlobMissingError(digest, self.describe(), "not stored under any key of REACT_ENCRYPTION_KEYS")

    async def has(self, digest: str) -> bool:
        """Whether the blob is stored under any configured key."""
        check_digest(digest)
        for key in self._keys:
            if await self.inner.has_sealed(key.name_of(digest)):
                return True
        return False

    async def check(self) -> None:
        """The inner store's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Close the inner store."""
        await self.inner.aclose()
