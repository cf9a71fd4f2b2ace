"""The payload store: a content-addressed blob store (key = SHA-256 of the bytes).

One store holds everything the product keeps outside Temporal history: claim-checked
payloads (`payloads.claim_check`), the LLM activity's message cache and archived
thread segments. Content addressing makes every write idempotent and stores an
identical blob once. `LocalDiskBlobStore` is the embedded default; deployments use an
S3-compatible store (`payloads.s3_blob_store`); both implement `BlobStore`
(`payloads.blob_store_interface`). `blob_store_from_env` opens the one
that `REACT_PAYLOAD_STORE` names, shared by everything in the process (encrypting
when `REACT_ENCRYPTION_KEYS` is set).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from payloads.blob_store_interface import (
    BlobMissingError,
    BlobStore,
    BlobStoreError,
    check_digest,
    digest_of,
)
from settings.deployment import EncryptionKey, FileStoreSetting, S3StoreSetting, load_settings

__all__ = [
    "BlobMissingError",
    "BlobStore",
    "BlobStoreError",
    "LocalDiskBlobStore",
    "blob_store_from_env",
    "check_digest",
    "digest_of",
    "open_blob_store",
    "shared_blob_store",
]

SMALL_WRITE_BYTES = 256 * 1024
"""Non-durable writes up to this size happen on the event loop (no thread hop)."""


class LocalDiskBlobStore(BlobStore):
    """Blobs as files `<root>/sha256/<first two hex digits>/<digest>`, written atomically.

    A blob is written to a temporary file in its final folder, flushed to disk, then
    renamed into place, so a reader sees the whole blob or none (a crash leaves at most
    a `.tmp-*` file, never a partial blob). Files are readable by their owner only.
    """

    def __init__(self, root: Path) -> None:
        """Use (and create on first write) the folder `root`."""
        self.root = root

    def describe(self) -> str:
        """The store's location."""
        return f"file:{self.root}"

    def path_of(self, digest: str) -> Path:
        """Where the blob `digest` lives."""
        check_digest(digest)
        return self.root / "sha256" / digest[:2] / digest

    async def put(self, data: bytes, *, durable: bool = True) -> str:
        """Write to a temporary file in the same folder, then rename it into place.

        A small non-durable write (a cache entry) happens right here: a thread hop would
        cost more than the write.
        """
        if not durable and len(data) <= SMALL_WRITE_BYTES:
            return self._put(data, durable=False)
        return await asyncio.to_thread(self._put, data, durable=durable)

    def _put(self, data: bytes, *, durable: bool) -> str:
        digest = digest_of(data)
        path = self.path_of(digest)
        try:
            if path.stat().st_size == len(data):
                return digest
        except FileNotFoundError:
            pass
        # Missing, or cut short by something outside this store: (re)write it whole.
        _write_atomically(path, data, durable=durable)
        return digest

    async def get(self, digest: str) -> bytes:
        """Read and verify the blob."""
        path = self.path_of(digest)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise BlobMissingError(digest, self.describe()) from None
        if digest_of(data) != digest:
            raise BlobMissingError(digest, self.describe(), "stored bytes do not match the digest")
        return data

    async def has(self, digest: str) -> bool:
        """Whether the file exists."""
        return self.path_of(digest).exists()

    def sealed_path_of(self, name: str) -> Path:
        """Where the sealed blob `name` lives: `<root>/sealed/<first two hex digits>/<name>`."""
        check_digest(name)
        return self.root / "sealed" / name[:2] / name

    async def put_sealed(self, name: str, data: bytes, *, durable: bool = True) -> None:
        """Write atomically, like `put`."""
        path = self.sealed_path_of(name)
        if not durable and len(data) <= SMALL_WRITE_BYTES:
            _write_atomically(path, data, durable=False)
            return
        await asyncio.to_thread(_write_atomically, path, data, durable=durable)

    async def get_sealed(self, name: str) -> bytes | None:
        """The file's bytes, or None."""
        try:
            return await asyncio.to_thread(self.sealed_path_of(name).read_bytes)
        except FileNotFoundError:
            return None

    async def has_sealed(self, name: str) -> bool:
        """Whether the file exists."""
        return self.sealed_path_of(name).exists()

    async def check(self) -> None:
        """The root folder exists (or can be created) and is writable."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".tmp-check-")
            probe.close()
        except OSError as error:
            raise BlobStoreError(
                f"the payload store {self.describe()} is not writable ({error.strerror or error}); "
                "check REACT_PAYLOAD_STORE and the folder's permissions"
            ) from None


def _write_atomically(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write a temporary file in `path`'s folder, flush it to disk (if `durable`), rename it to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (best effort: not every platform can open folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_blob_store(setting: FileStoreSetting | S3StoreSetting) -> BlobStore:
    """A new store for `setting` (the S3 client library is imported only for an S3 store)."""
    if isinstance(setting, FileStoreSetting):
        return LocalDiskBlobStore(setting.root)
    from payloads.s3_blob_store import S3BlobStore

    return S3BlobStore(setting)


_shared: dict[FileStoreSetting | S3StoreSetting, BlobStore] = {}


def shared_blob_store(setting: FileStoreSetting | S3StoreSetting) -> BlobStore:
    """The process's one store for `setting` (one connection pool, one place to close)."""
    store = _shared.get(setting)
    if store is None:
        store = _shared[setting] = open_blob_store(setting)
    return store


def blob_store_from_env() -> BlobStore:
    """The store that `REACT_PAYLOAD_STORE` names, for blobs written directly (not claim-checked payloads).

    With encryption on (`REACT_ENCRYPTION_KEYS`) it encrypts what it stores
    (`payloads.codec.SealedBlobStore`: same API, same plaintext digests), so the store never
    holds plaintext. Shared within the process.

    Raises:
        SettingsError: a payload-store or encryption variable has a value that cannot be used.
    """
    settings = load_settings()
    store = shared_blob_store(settings.payload_store)
    if not settings.encryption_on:
        return store
    from payloads.codec import SealedBlobStore

    key = (settings.payload_store, settings.encryption_keys)
    sealed = _sealed.get(key)
    if sealed is None:
        sealed = _sealed[key] = SealedBlobStore(store, settings.encryption_keys)
    return sealed


_sealed: dict[tuple[FileStoreSetting | S3StoreSetting, tuple[EncryptionKey, ...]], BlobStore] = {}
