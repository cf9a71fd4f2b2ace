"""The claim check: a `temporalio.converter.StorageDriver` that keeps large payloads in a `BlobStore`.

`ExternalStorage` hands this driver every payload of at least the threshold size;
the driver stores the payload's serialized bytes under their SHA-256 and returns a
claim `{"sha256": <digest>}`. History then holds a small reference instead of the
payload (in the Web UI: `{"driverName": "react.payload-store", "claimData": {"sha256":
...}}`), and every worker and client that reads it fetches the bytes back from the
store. Identical payloads (the same JSON, the same encryption) are stored once.

The driver has one name whatever the store is (disk or S3), so a client pointed at
the wrong store gets "blob ... is missing from the payload store ..." rather than
an unknown-driver error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from payloads.blob_store import BlobMissingError, BlobStore, check_digest

DRIVER_NAME = "react.payload-store"
CLAIM_KEY = "sha256"


class PayloadClaimError(ValueError):
    """A claim that names no valid digest, or a stored blob that is not a payload."""


class BlobStoreDriver(StorageDriver):
    """Stores payloads in a content-addressed `BlobStore`; the claim is the SHA-256 digest."""

    def __init__(self, store: BlobStore) -> None:
        """Keep payloads in `store`."""
        # Not `self.store`: that name is the driver's `store()` method.
        self.blobs = store

    def name(self) -> str:
        """The name written into every reference (the same for every kind of store)."""
        return DRIVER_NAME

    def type(self) -> str:
        """The driver type (stable across instances)."""
        return DRIVER_NAME

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        """Put each payload's bytes in the store; one claim per payload, in order."""
        # Deterministic serialization (sorted metadata), so equal payloads give equal bytes.
        blobs = [payload.SerializeToString(deterministic=True) for payload in payloads]
        digests = await asyncio.gather(*(self.blobs.put(blob) for blob in blobs))
        return [StorageDriverClaim(claim_data={CLAIM_KEY: digest}) for digest in digests]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Get each claimed payload back from the store.

        Raises:
            BlobMissingError: a claimed blob is not in this store (the message names it and the store).
            PayloadClaimError: a claim without a valid digest, or a blob that is not a payload.
        """
        return list(await asyncio.gather(*(self.load(claim_digest(claim)) for claim in claims)))

    async def load(self, digest: str) -> Payload:
        """The payload stored under `digest` (as `retrieve` returns it)."""
        try:
            data = await self.blobs.get(digest)
        except BlobMissingError as missing:
            raise BlobMissingError(
                digest,
                self.blobs.describe(),
                "a claim-checked Temporal payload: check that this process's REACT_PAYLOAD_STORE "
                "names the store the worker writes to, and that the blob was not deleted",
            ) from missing
        payload = Payload()
        try:
            payload.ParseFromString(data)
        except DecodeError:
            raise PayloadClaimError(
                f"blob sha256:{digest} in the payload store {self.blobs.describe()} is not a Temporal payload"
            ) from None
        return payload


def claim_digest(claim: StorageDriverClaim) -> str:
    """The digest a claim names.

    Raises:
        PayloadClaimError: the claim has no valid SHA-256 digest.
    """
    digest = claim.claim_data.get(CLAIM_KEY, "")
    try:
        return check_digest(digest)
    except ValueError:
        raise PayloadClaimError(
            f"payload reference without a valid {CLAIM_KEY} digest: {dict(claim.claim_data)!r:.200}"
        ) from None
