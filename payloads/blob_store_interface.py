"""The payload store's interface: `BlobStore`, its errors and its digests.

Its own module so that the stores (`payloads.blob_store`, `payloads.s3_blob_store`) and the
encrypting wrapper (`payloads.codec`) build on it without importing one another;
`payloads.blob_store` opens whichever the settings name and re-exports these names.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod

HEX_DIGITS = frozenset("0123456789abcdef")


class BlobMissingError(LookupError):
    """A blob referenced by digest is not in the store (or its bytes no longer match the digest)."""

    def __init__(self, digest: str, store: str, detail: str = "") -> None:
        """Create the error; the message names the digest and the store."""
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"blob sha256:{digest} is missing from the payload store {store}{extra}; "
            "every worker and client must share the same store (REACT_PAYLOAD_STORE)"
        )
        self.digest = digest
        self.store = store


class BlobStoreError(RuntimeError):
    """The store itself cannot be used (unreachable, no permission, no such bucket); says what to check."""


def digest_of(data: bytes) -> str:
    """The key of `data`: its SHA-256, lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def check_digest(digest: str) -> str:
    """`digest` if it is a lower-case SHA-256 hex digest.

    Raises:
        ValueError: anything else (so no caller-supplied text ever becomes a path or key).
    """
    if len(digest) != 64 or not HEX_DIGITS.issuperset(digest):
        raise ValueError(f"not a sha256 hex digest: {digest[:80]!r}")
    return digest


class BlobStore(ABC):
    """Content-addressed bytes: `put` returns the SHA-256 hex digest, `get` verifies it."""

    @abstractmethod
    def describe(self) -> str:
        """Where the store is, for messages (e.g. `file:/srv/payloads`)."""

    @abstractmethod
    async def put(self, data: bytes, *, durable: bool = True) -> str:
        """Store `data` under its digest (idempotent and atomic) and return the digest.

        `durable=False` is for caches (the LLM activity's messages): the write may skip
        flushing to disk, since losing it in a machine crash only costs a cache miss.
        """

    @abstractmethod
    async def get(self, digest: str) -> bytes:
        """The bytes stored under `digest`.

        Raises:
            BlobMissingError: nothing is stored under `digest`, or the stored bytes do not hash to it.
        """

    @abstractmethod
    async def has(self, digest: str) -> bool:
        """Whether a blob is stored under `digest`."""

    async def put_sealed(self, name: str, data: bytes, *, durable: bool = True) -> None:
        """Store encrypted bytes under `name` (64 hex digits chosen by the encrypting wrapper).

        Content addressing cannot apply to ciphertext that callers address by the digest of
        its plaintext, so `payloads.codec.SealedBlobStore` keeps its blobs in this separate
        area, under names only the key holder can compute.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot hold sealed blobs")

    async def get_sealed(self, name: str) -> bytes | None:
        """The bytes stored by `put_sealed` under `name`, or None."""
        raise NotImplementedError(f"{type(self).__name__} cannot hold sealed blobs")

    async def has_sealed(self, name: str) -> bool:
        """Whether `put_sealed` stored something under `name`."""
        return await self.get_sealed(name) is not None

    async def check(self) -> None:  # noqa: B027 (optional hook, a no-op by default)
        """Fail fast when the store cannot be used (the worker calls this at start).

        Raises:
            BlobStoreError: what is wrong and what to check.
        """

    async def aclose(self) -> None:  # noqa: B027 (optional hook, a no-op by default)
        """Release connections (nothing to release by default)."""
