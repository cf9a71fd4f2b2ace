"""An S3-compatible payload store (AWS S3, MinIO, ...) over aiobotocore.

Objects are `<prefix>/sha256/<digest>` in one bucket: addressing is global (not per
workflow), so an identical blob is stored once whoever writes it. A put first asks
whether the object exists (content addressing makes that answer final); S3's PUT is
atomic, so a reader never sees part of an object. `get` verifies the SHA-256.

Credentials come from the standard AWS chain (`AWS_ACCESS_KEY_ID` and
`AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, an instance role...). With a custom endpoint
(`REACT_S3_ENDPOINT_URL`) path-style addressing is used, which MinIO and most
S3-compatible servers expect. This module is imported only when an S3 store is set up.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, cast

from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from payloads.blob_store_interface import BlobMissingError, BlobStore, BlobStoreError, check_digest, digest_of
from settings.deployment import S3StoreSetting

if TYPE_CHECKING:
    from types_aiobotocore_s3.client import S3Client

NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
DENIED = {"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken"}
NO_BUCKET = {"NoSuchBucket"}


class S3BlobStore(BlobStore):
    """Blobs as S3 objects `<prefix>/sha256/<digest>` in `setting.bucket`."""

    def __init__(self, setting: S3StoreSetting) -> None:
        """Use the bucket, prefix, endpoint and region of `setting` (connects on first use)."""
        self.setting = setting
        self._client: S3Client | None = None
        self._stack: AsyncExitStack | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    def describe(self) -> str:
        """`s3://bucket/prefix`, and the endpoint when it is not AWS."""
        where = f"s3://{self.setting.bucket}/{self.setting.prefix}".rstrip("/")
        return f"{where} at {self.setting.endpoint_url}" if self.setting.endpoint_url else where

    def key_of(self, digest: str) -> str:
        """The object key of the blob `digest`."""
        check_digest(digest)
        return f"{self.setting.prefix}/sha256/{digest}" if self.setting.prefix else f"sha256/{digest}"

    async def put(self, data: bytes, *, durable: bool = True) -> str:
        """Upload `data` unless an object with its digest is already there."""
        digest = digest_of(data)
        key = self.key_of(digest)
        if await self._exists(key, "put"):
            return digest
        await self._put(key, data)
        return digest

    async def get(self, digest: str) -> bytes:
        """Download and verify the blob."""
        key = self.key_of(digest)
        try:
            data = await self._download(key)
        except ClientError as error:
            if _code(error) in NOT_FOUND:
                raise BlobMissingError(digest, self.describe()) from None
            raise self._failure("get", key, error) from error
        except BotoCoreError as error:
            raise self._failure("get", key, error) from error
        if digest_of(data) != digest:
            raise BlobMissingError(digest, self.describe(), "stored bytes do not match the digest")
        return data

    async def has(self, digest: str) -> bool:
        """Whether the object exists."""
        return await self._exists(self.key_of(digest), "has")

    def sealed_key_of(self, name: str) -> str:
        """The object key of the sealed blob `name`: `<prefix>/sealed/<name>`."""
        check_digest(name)
        return f"{self.setting.prefix}/sealed/{name}" if self.setting.prefix else f"sealed/{name}"

    async def _put(self, key: str, data: bytes) -> None:
        s3 = await self._s3()
        try:
            await s3.put_object(
                Bucket=self.setting.bucket, Key=key, Body=data, ContentType="application/octet-stream"
            )
        except (ClientError, BotoCoreError) as error:
            raise self._failure("put", key, error) from error

    async def put_sealed(self, name: str, data: bytes, *, durable: bool = True) -> None:
        """Upload `data` as the object `<prefix>/sealed/<name>`."""
        key = self.sealed_key_of(name)
        await self._put(key, data)

    async def get_sealed(self, name: str) -> bytes | None:
        """The object's bytes, or None when there is none."""
        key = self.sealed_key_of(name)
        try:
            return await self._download(key)
        except ClientError as error:
            if _code(error) in NOT_FOUND:
                return None
            raise self._failure("get", key, error) from error
        except BotoCoreError as error:
            raise self._failure("get", key, error) from error

    async def has_sealed(self, name: str) -> bool:
        """Whether the object exists."""
        return await self._exists(self.sealed_key_of(name), "has")

    async def _download(self, key: str) -> bytes:
        s3 = await self._s3()
        response = await s3.get_object(Bucket=self.setting.bucket, Key=key)
        async with response["Body"] as body:
            return await body.read()

    async def check(self) -> None:
        """The bucket exists and these credentials may use it."""
        s3 = await self._s3()
        try:
            await s3.head_bucket(Bucket=self.setting.bucket)
        except (ClientError, BotoCoreError) as error:
            raise self._failure("check", "", error) from error

    async def aclose(self) -> None:
        """Close the client of the current event loop (if any)."""
        stack, self._stack, self._client, self._loop = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    async def _exists(self, key: str, operation: str) -> bool:
        s3 = await self._s3()
        try:
            await s3.head_object(Bucket=self.setting.bucket, Key=key)
        except ClientError as error:
            if _code(error) in NOT_FOUND:
                return False
            raise self._failure(operation, key, error) from error
        except BotoCoreError as error:
            raise self._failure(operation, key, error) from error
        return True

    async def _s3(self) -> S3Client:
        """The client of the running event loop (aiohttp sessions cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is loop:
            return self._client
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop, self._client, self._stack = asyncio.Lock(), loop, None, None
        async with self._lock:
            if self._client is None:
                stack = AsyncExitStack()
                creator: Any = get_session().create_client(  # pyright: ignore[reportUnknownMemberType]
                    "s3",
                    region_name=self.setting.region,
                    endpoint_url=self.setting.endpoint_url,
                    config=self._config(),
                )
                self._client = cast("S3Client", await stack.enter_async_context(creator))
                self._stack = stack
            return self._client

    def _config(self) -> AioConfig:
        return AioConfig(
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            # S3-compatible servers want path-style URLs; and `get` checks SHA-256 itself, so
            # skip the newer CRC checksums that some S3-compatible servers reject.
            s3={"addressing_style": "path" if self.setting.endpoint_url else "auto"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )

    def _failure(self, operation: str, key: str, error: Exception) -> BlobStoreError:
        """A `BlobStoreError` saying what failed and what to check."""
        where = self.describe()
        if isinstance(error, NoCredentialsError):
            hint = (
                "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
            )
        elif isinstance(error, ClientError):
            code = _code(error)
            if code in NO_BUCKET or (operation == "check" and code in NOT_FOUND):
                hint = (
                    f"the bucket {self.setting.bucket!r} does not exist: create it or fix REACT_PAYLOAD_STORE"
                )
            elif code in DENIED:
                hint = (
                    f"access denied ({code}): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY "
                    "and the bucket's policy"
                )
            else:
                hint = f"{code}: {error.response.get('Error', {}).get('Message', '')}".rstrip(": ")
        else:
            hint = f"{type(error).__name__}: {error}; check REACT_S3_ENDPOINT_URL and the network"
        target = f" of {key}" if key else ""
        return BlobStoreError(f"payload store {where}: {operation}{target} failed: {hint}")


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
