"""The payload store: a content-addressed blob store (key = SHA-256 of the bytes).

One store holds everything the product keeps outside Temporal history: claim-checked
payloads (`runtime.payload_storage`), the LLM activity's message cache and archived
thread segments. Content addressing makes every write idempotent and stores an
identical blob once. `LocalDiskBlobStore` is the embedded default; deployments use an
S3-compatible store (see `blob_store_from_env`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path


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


def digest_of(data: bytes) -> str:
    """The key of `data`: its SHA-256, lower-case hex."""
    return hashlib.sha256(data).hexdigest()


class BlobStore(ABC):
    """Content-addressed bytes: `put` returns the SHA-256 hex digest, `get` verifies it."""

    @abstractmethod
    def describe(self) -> str:
        """Where the store is, for messages (e.g. `file:/srv/payloads`)."""

    @abstractmethod
    async def put(self, data: bytes) -> str:
        """Store `data` under its digest (idempotent and atomic) and return the digest."""

    @abstractmethod
    async def get(self, digest: str) -> bytes:
        """The bytes stored under `digest`.

        Raises:
            BlobMissingError: nothing is stored under `digest`, or the stored bytes do not hash to it.
        """

    @abstractmethod
    async def has(self, digest: str) -> bool:
        """Whether a blob is stored under `digest`."""


class LocalDiskBlobStore(BlobStore):
    """Blobs as files `<root>/sha256/<first two hex digits>/<digest>`, written atomically."""

    def __init__(self, root: Path) -> None:
        """Use (and create on first write) the folder `root`."""
        self.root = root

    def describe(self) -> str:
        """The store's location."""
        return f"file:{self.root}"

    def path_of(self, digest: str) -> Path:
        """Where the blob `digest` lives."""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"not a sha256 hex digest: {digest!r}")
        return self.root / "sha256" / digest[:2] / digest

    async def put(self, data: bytes) -> str:
        """Write to a temporary file in the same folder, then rename it into place."""
        digest = digest_of(data)
        path = self.path_of(digest)
        if path.exists():
            return digest
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    async def get(self, digest: str) -> bytes:
        """Read and verify the blob."""
        try:
            data = self.path_of(digest).read_bytes()
        except FileNotFoundError:
            raise BlobMissingError(digest, self.describe()) from None
        if digest_of(data) != digest:
            raise BlobMissingError(digest, self.describe(), "stored bytes do not match the digest")
        return data

    async def has(self, digest: str) -> bool:
        """Whether the file exists."""
        return self.path_of(digest).exists()
