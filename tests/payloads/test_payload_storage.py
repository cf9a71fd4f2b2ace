"""The claim check end to end on a real dev server, and the payload-store settings.

A tiny workflow echoes a 3 MB text through an activity: the workflow input, the
activity's input and result and the workflow result are all claim-checked, so
history holds only references and no workflow task fails.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from google.protobuf import json_format
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from hosting.data_converter import build_data_converter
from payloads.blob_store import BlobMissingError, LocalDiskBlobStore
from payloads.claim_check import DRIVER_NAME
from settings.deployment import (
    DEFAULT_PAYLOAD_ROOT,
    DEFAULT_PAYLOAD_THRESHOLD,
    FileStoreSetting,
    S3StoreSetting,
    Settings,
    SettingsError,
    load_settings,
)

MB = 1_000_000
REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()


@activity.defn(name="shout")
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn(name="PayloadEcho", sandboxed=False)
class PayloadEcho:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=60))


def big_text(size: int = 3 * MB, seed: int | None = None) -> str:
    """`size` characters of random lower-case hex (`upper()` gives a different text)."""
    return random.Random(seed).randbytes(size // 2).hex()


def payload_digest(value: object) -> str:
    """The store key of `value`'s payload, computed the way the driver does."""
    import hashlib

    [payload] = build_data_converter(Settings()).payload_converter.to_payloads([value])
    return hashlib.sha256(payload.SerializeToString(deterministic=True)).hexdigest()


def references(history: History) -> list[str]:
    """The digests of every claim-check reference in `history`, in event order."""
    found: list[str] = []

    def visit(payload: Payload) -> None:
        if payload.metadata.get("messageType") == REFERENCE_TYPE:
            reference = json_format.Parse(payload.data, ExternalStorageReference())
            assert reference.driver_name == DRIVER_NAME
            found.append(reference.claim_data["sha256"])

    for event in history.events:
        for attributes in (
            event.workflow_execution_started_event_attributes.input,
            event.activity_task_scheduled_event_attributes.input,
            event.activity_task_completed_event_attributes.result,
            event.workflow_execution_completed_event_attributes.result,
        ):
            for payload in attributes.payloads:
                visit(payload)
    return found


async def raw_history(client: Client, workflow_id: str) -> History:
    """The workflow's history as Temporal stores it (payloads not decoded)."""
    return History(events=(await client.get_workflow_handle(workflow_id).fetch_history()).events)


def echo_worker(client: Client) -> tuple[Worker, str]:
    """A worker for `PayloadEcho` on a queue of its own (not started)."""
    queue = f"payload-echo-{uuid.uuid4().hex[:8]}"
    worker = Worker(
        client, task_queue=queue, workflows=[PayloadEcho], activities=[shout], max_cached_workflows=0
    )
    return worker, queue


@pytest.fixture(scope="module")
def payload_store_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This module's own payload store folder: what other tests do to theirs cannot touch it."""
    return tmp_path_factory.mktemp("payloads")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def client(env: WorkflowEnvironment, payload_store_root: Path) -> Client:
    """A client (and so its workers) with the product's converter over this module's store."""
    settings = Settings(payload_store=FileStoreSetting(payload_store_root))
    base = env.client
    return Client(
        base.service_client, namespace=base.namespace, data_converter=build_data_converter(settings)
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def echo_queue(client: Client) -> AsyncIterator[str]:
    worker, queue = echo_worker(client)
    async with worker:
        yield queue


async def echo(client: Client, queue: str, text: str) -> str:
    """Run `PayloadEcho` on `text` to its end; returns the workflow id."""
    handle = await client.start_workflow(PayloadEcho.run, text, id=f"echo-{uuid.uuid4()}", task_queue=queue)
    assert await handle.result() == text.upper()
    return handle.id


async def test_3mb_input_and_result_round_trip_with_only_references_in_history(
    client: Client, echo_queue: str, payload_store_root: Path
) -> None:
    text = big_text(seed=1)
    history = await raw_history(client, await echo(client, echo_queue, text))
    kinds = {event.event_type for event in history.events}
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED in kinds
    assert history.ByteSize() < 20_000, "history holds references, not megabytes"
    assert text[:200].encode() not in history.SerializeToString()
    # Input, activity input, activity result, workflow result: two distinct texts, two blobs.
    lower, upper = payload_digest(text), payload_digest(text.upper())
    assert references(history) == [lower, lower, upper, upper]
    store = LocalDiskBlobStore(payload_store_root)
    assert await store.has(lower) and await store.has(upper)


async def test_identical_payload_is_stored_once(
    client: Client, echo_queue: str, payload_store_root: Path
) -> None:
    text = big_text(1 * MB, seed=2)
    path = LocalDiskBlobStore(payload_store_root).path_of(payload_digest(text))
    await echo(client, echo_queue, text)
    written = path.stat()
    await echo(client, echo_queue, text)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (written.st_ino, written.st_mtime_ns), "not written again"


async def test_small_payloads_stay_inline(client: Client, echo_queue: str) -> None:
    small = "x" * (DEFAULT_PAYLOAD_THRESHOLD // 2)
    history = await raw_history(client, await echo(client, echo_queue, small))
    assert references(history) == []
    assert small.encode() in history.SerializeToString()


async def test_missing_input_blob_fails_the_workflow_task_with_the_named_error(
    client: Client, payload_store_root: Path
) -> None:
    text = big_text(1 * MB, seed=3)
    digest = payload_digest(text)
    worker, queue = echo_worker(client)
    handle = await client.start_workflow(PayloadEcho.run, text, id=f"echo-{uuid.uuid4()}", task_queue=queue)
    # Lost before any worker read it: the workflow task fails with the named error (and retries).
    LocalDiskBlobStore(payload_store_root).path_of(digest).unlink()
    async with worker:
        failure = await wait_for_task_failure(handle.id, client)
    await handle.terminate("test done")
    assert digest in failure and f"file:{payload_store_root}" in failure and "REACT_PAYLOAD_STORE" in failure


async def test_missing_result_blob_is_a_named_error_for_the_client(
    client: Client, echo_queue: str, payload_store_root: Path
) -> None:
    text = big_text(1 * MB, seed=4)
    workflow_id = await echo(client, echo_queue, text)
    digest = payload_digest(text.upper())
    LocalDiskBlobStore(payload_store_root).path_of(digest).unlink()
    with pytest.raises(BlobMissingError) as caught:
        await client.get_workflow_handle(workflow_id).result()
    assert_names_digest(caught.value, digest, payload_store_root)


def assert_names_digest(error: BaseException, digest: str, root: Path) -> None:
    message = str(error)
    assert digest in message and f"file:{root}" in message and "REACT_PAYLOAD_STORE" in message


async def wait_for_task_failure(workflow_id: str, client: Client) -> str:
    """The message of the first WorkflowTaskFailed event of `workflow_id` (waits up to 30 s)."""
    import asyncio

    for _ in range(300):
        history = await raw_history(client, workflow_id)
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                return event.workflow_task_failed_event_attributes.failure.message
        await asyncio.sleep(0.1)
    raise AssertionError("no workflow task failed")


# ---- settings -------------------------------------------------------------------------------------


def test_default_store_is_absolute_under_the_repo() -> None:
    settings = load_settings({})
    assert settings.payload_store == FileStoreSetting(DEFAULT_PAYLOAD_ROOT)
    assert DEFAULT_PAYLOAD_ROOT.is_absolute() and DEFAULT_PAYLOAD_ROOT.parts[-2:] == (".temporal", "payloads")
    assert settings.payload_threshold == 128 * 1024


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"REACT_PAYLOAD_STORE": "file:/srv/payloads"}, FileStoreSetting(Path("/srv/payloads"))),
        ({"REACT_PAYLOAD_STORE": "file:///srv/payloads"}, FileStoreSetting(Path("/srv/payloads"))),
        ({"REACT_PAYLOAD_STORE": " s3://my-bucket "}, S3StoreSetting("my-bucket", "", None, "us-east-1")),
        (
            {
                "REACT_PAYLOAD_STORE": "s3://my.bucket/a/b/",
                "REACT_S3_ENDPOINT_URL": "http://localhost:9000/",
                "AWS_REGION": "eu-west-1",
            },
            S3StoreSetting("my.bucket", "a/b", "http://localhost:9000", "eu-west-1"),
        ),
    ],
)
def test_payload_store_settings(env: dict[str, str], expected: FileStoreSetting | S3StoreSetting) -> None:
    assert load_settings(env).payload_store == expected


@pytest.mark.parametrize(
    ("text", "size"), [("0", 0), ("131072", 131072), ("64KiB", 65536), ("64k", 65536), ("1MiB", 1048576)]
)
def test_threshold_settings(text: str, size: int) -> None:
    assert load_settings({"REACT_PAYLOAD_THRESHOLD": text}).payload_threshold == size


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        ({"REACT_PAYLOAD_STORE": "file:relative/dir"}, "REACT_PAYLOAD_STORE", "must be absolute"),
        ({"REACT_PAYLOAD_STORE": "file:"}, "REACT_PAYLOAD_STORE", "must be absolute"),
        ({"REACT_PAYLOAD_STORE": "/srv/payloads"}, "REACT_PAYLOAD_STORE", "expected file:<absolute path>"),
        ({"REACT_PAYLOAD_STORE": "gs://bucket"}, "REACT_PAYLOAD_STORE", "expected file:<absolute path>"),
        ({"REACT_PAYLOAD_STORE": "s3://Bad_Bucket"}, "REACT_PAYLOAD_STORE", "not a valid S3 bucket"),
        ({"REACT_PAYLOAD_STORE": "s3://"}, "REACT_PAYLOAD_STORE", "not a valid S3 bucket"),
        ({"REACT_PAYLOAD_THRESHOLD": "lots"}, "REACT_PAYLOAD_THRESHOLD", "expected a size"),
        ({"REACT_PAYLOAD_THRESHOLD": "-1"}, "REACT_PAYLOAD_THRESHOLD", "expected a size"),
        ({"REACT_PAYLOAD_THRESHOLD": "3MiB"}, "REACT_PAYLOAD_THRESHOLD", "above the maximum"),
        ({"REACT_PAYLOAD_THRESHOLD": "9" * 400}, "REACT_PAYLOAD_THRESHOLD", "above the maximum"),
        (
            {"REACT_PAYLOAD_STORE": "s3://b-1", "REACT_S3_ENDPOINT_URL": "localhost:9000"},
            "REACT_S3_ENDPOINT_URL",
            "expected an http(s) URL",
        ),
        (
            {"REACT_PAYLOAD_STORE": "s3://b-1", "REACT_S3_ENDPOINT_URL": "http://h:99999"},
            "REACT_S3_ENDPOINT_URL",
            "invalid port",
        ),
    ],
)
def test_bad_store_settings_are_one_line_naming_the_variable(
    env: dict[str, str], variable: str, fragment: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(env)
    message = str(caught.value)
    assert message.startswith(f"{variable}: ") and fragment in message and "\n" not in message
    assert caught.value.variable == variable
