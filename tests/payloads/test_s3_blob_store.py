"""The S3-compatible payload store against a real S3 HTTP server on 127.0.0.1 (moto's server mode).

Includes a workflow round trip through the dev server with the S3 store as the claim check.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from aiobotocore.session import get_session
from temporalio.client import Client
from temporalio.worker import Worker

from hosting.data_converter import build_data_converter
from payloads.blob_store import BlobMissingError, BlobStoreError, digest_of
from payloads.codec import SealedBlobStore
from payloads.s3_blob_store import S3BlobStore
from settings.deployment import EncryptionKey, S3StoreSetting, load_settings
from tests.payloads.test_payload_storage import (
    PayloadEcho,
    big_text,
    payload_digest,
    raw_history,
    references,
    shout,
)
from tests.s3_server import free_port, moto_s3_endpoint

BUCKET = "react-payloads"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible server on a free port of 127.0.0.1, with test credentials in the environment."""
    with moto_s3_endpoint() as endpoint:
        yield endpoint


async def s3_call(endpoint: str, operation: str, **arguments: Any) -> Any:
    """One raw S3 call (outside the store under test)."""
    session: Any = get_session()
    async with session.create_client("s3", region_name="us-east-1", endpoint_url=endpoint) as s3:
        return await getattr(s3, operation)(**arguments)


async def object_bytes(endpoint: str, key: str) -> bytes:
    session: Any = get_session()
    async with session.create_client("s3", region_name="us-east-1", endpoint_url=endpoint) as s3:
        response = await s3.get_object(Bucket=BUCKET, Key=key)
        async with response["Body"] as body:
            return await body.read()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def bucket(s3_endpoint: str) -> str:
    await s3_call(s3_endpoint, "create_bucket", Bucket=BUCKET)
    return BUCKET


@pytest_asyncio.fixture(loop_scope="session")
async def store(s3_endpoint: str, bucket: str) -> AsyncIterator[S3BlobStore]:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    opened = S3BlobStore(S3StoreSetting(bucket, prefix, s3_endpoint, "us-east-1"))
    yield opened
    await opened.aclose()


async def keys_under(endpoint: str, prefix: str) -> list[str]:
    listing = await s3_call(endpoint, "list_objects_v2", Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for item in listing.get("Contents", [])]


async def test_put_get_has_and_key_layout(store: S3BlobStore, s3_endpoint: str) -> None:
    data = os.urandom(3_000_000)
    digest = await store.put(data)
    assert digest == digest_of(data)
    assert await store.get(digest) == data
    assert await store.has(digest)
    assert await keys_under(s3_endpoint, store.setting.prefix) == [f"{store.setting.prefix}/sha256/{digest}"]


async def test_identical_blob_is_uploaded_once(store: S3BlobStore, s3_endpoint: str) -> None:
    data = b"same bytes" * 10_000
    digest = await store.put(data)
    key = store.key_of(digest)
    first = await s3_call(s3_endpoint, "head_object", Bucket=BUCKET, Key=key)
    assert await store.put(data) == digest
    again = await s3_call(s3_endpoint, "head_object", Bucket=BUCKET, Key=key)
    assert again["LastModified"] == first["LastModified"]
    assert await keys_under(s3_endpoint, store.setting.prefix) == [key]


async def test_addressing_is_global_across_stores_with_the_same_prefix(
    store: S3BlobStore, s3_endpoint: str
) -> None:
    digest = await store.put(b"written by one worker")
    other = S3BlobStore(store.setting)
    try:
        assert await other.get(digest) == b"written by one worker"
    finally:
        await other.aclose()


async def test_missing_and_corrupted_objects_are_named(store: S3BlobStore, s3_endpoint: str) -> None:
    digest = digest_of(b"never stored")
    assert not await store.has(digest)
    with pytest.raises(BlobMissingError) as caught:
        await store.get(digest)
    message = str(caught.value)
    assert digest in message and f"s3://{BUCKET}/{store.setting.prefix} at {s3_endpoint}" in message
    await s3_call(s3_endpoint, "put_object", Bucket=BUCKET, Key=store.key_of(digest), Body=b"other bytes")
    with pytest.raises(BlobMissingError, match="do not match the digest"):
        await store.get(digest)


async def test_sealed_blobs_on_s3_hold_only_ciphertext(store: S3BlobStore, s3_endpoint: str) -> None:
    sealed = SealedBlobStore(store, [EncryptionKey("k1", b"\x01" * 32)])
    digest = await sealed.put(b"SENTINEL-s3-message")
    assert await sealed.get(digest) == b"SENTINEL-s3-message" and await sealed.has(digest)
    [key] = await keys_under(s3_endpoint, f"{store.setting.prefix}/sealed/")
    assert b"SENTINEL" not in await object_bytes(s3_endpoint, key)
    assert digest not in key and not await store.has(digest)


async def test_check_names_a_missing_bucket_and_an_unreachable_endpoint(
    store: S3BlobStore, s3_endpoint: str
) -> None:
    await store.check()
    no_bucket = S3BlobStore(S3StoreSetting("no-such-bucket", "", s3_endpoint, "us-east-1"))
    with pytest.raises(BlobStoreError, match="bucket 'no-such-bucket' does not exist"):
        await no_bucket.check()
    with pytest.raises(BlobStoreError, match="bucket 'no-such-bucket' does not exist"):
        await no_bucket.put(b"anything")
    await no_bucket.aclose()
    nowhere = S3BlobStore(S3StoreSetting(BUCKET, "", f"http://127.0.0.1:{free_port()}", "us-east-1"))
    with pytest.raises(BlobStoreError, match="REACT_S3_ENDPOINT_URL"):
        await nowhere.check()
    await nowhere.aclose()


async def test_workflow_round_trip_with_the_s3_store(client: Client, s3_endpoint: str, bucket: str) -> None:
    prefix = f"workflow-{uuid.uuid4().hex[:8]}"
    settings = load_settings(
        {"REACT_PAYLOAD_STORE": f"s3://{bucket}/{prefix}", "REACT_S3_ENDPOINT_URL": s3_endpoint}
    )
    assert isinstance(settings.payload_store, S3StoreSetting)
    s3_store = S3BlobStore(settings.payload_store)
    s3_client = Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=build_data_converter(settings, store=s3_store),
    )
    queue = f"payload-echo-s3-{uuid.uuid4().hex[:8]}"
    text = big_text(seed=11)
    worker = Worker(
        s3_client, task_queue=queue, workflows=[PayloadEcho], activities=[shout], max_cached_workflows=0
    )
    async with worker:
        handle = await s3_client.start_workflow(
            PayloadEcho.run, text, id=f"echo-s3-{uuid.uuid4()}", task_queue=queue
        )
        assert await handle.result() == text.upper()
    lower, upper = payload_digest(text), payload_digest(text.upper())
    assert references(await raw_history(client, handle.id)) == [lower, lower, upper, upper]
    assert sorted(await keys_under(s3_endpoint, prefix)) == sorted(
        [f"{prefix}/sha256/{lower}", f"{prefix}/sha256/{upper}"]
    )
    await s3_store.aclose()
