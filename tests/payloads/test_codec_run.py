"""A whole run, encrypted: no plaintext in its history or the payload store, failure messages included.

Also the codec server and `client.py payload` over real processes and HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from google.protobuf import json_format
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowFailureError

from contracts import RunResult
from hosting.data_converter import build_data_converter
from payloads.codec import ENCODING, KEY_ID_METADATA, AesGcmCodec
from settings.deployment import EncryptionKey, load_settings
from tests.agent_tools import registry_for_tests
from tests.codec_helpers import K1, entry, plain
from tests.helpers import start_run, turn
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]
REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


# ---- a whole run, encrypted ---------------------------------------------------------------------


@dataclass
class Encrypted:
    client: Client
    raw: Client
    queue: str
    store_root: Path
    keys: str


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def encrypted(client: Client, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Encrypted]:
    root = tmp_path_factory.mktemp("encrypted-payloads")
    keys = f"{entry(K1)}"
    settings = load_settings({"REACT_PAYLOAD_STORE": f"file:{root}", "REACT_ENCRYPTION_KEYS": keys})
    converter = build_data_converter(settings)
    encrypting = Client(client.service_client, namespace=client.namespace, data_converter=converter)
    raw = Client(client.service_client, namespace=client.namespace)
    queue = f"react-encrypted-{uuid.uuid4().hex[:8]}"
    worker = build_worker(encrypting, task_queue=queue, registry=registry_for_tests(), max_cached_workflows=0)
    async with worker:
        yield Encrypted(encrypting, raw, queue, root, keys)


def all_payloads(message: Message) -> Iterator[Payload]:
    """Every `Payload` anywhere inside `message`."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = [v for v in value.values() if isinstance(v, Message)]
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            yield from all_payloads(item)


async def run_with_sentinels(encrypted: Encrypted) -> tuple[str, str, History]:
    """A completed run whose query and (claim-checked) answer carry sentinels; its raw history."""
    question, answer = f"QUESTION-{uuid.uuid4().hex}", f"ANSWER-{uuid.uuid4().hex}"
    script = [turn(f"{answer} " + "long answer " * 20_000)]
    handle = await start_run(encrypted.client, encrypted.queue, script, query=f"What is {question}?")
    result = await encrypted.client.get_workflow_handle(handle.id, result_type=RunResult).result()
    assert result.status == "completed" and answer in (result.result or "")
    events = (await encrypted.raw.get_workflow_handle(handle.id).fetch_history()).events
    return question, answer, History(events=events)


async def test_without_encryption_the_same_scan_finds_the_query(client: Client, task_queue: str) -> None:
    question = f"QUESTION-{uuid.uuid4().hex}"
    handle = await start_run(client, task_queue, [turn("fine")], query=f"What is {question}?")
    await handle.result()
    events = (await client.get_workflow_handle(handle.id).fetch_history()).events
    assert question.encode() in History(events=events).SerializeToString(), (
        "the scan below would see plaintext"
    )


async def test_no_plaintext_in_history_or_store(encrypted: Encrypted) -> None:
    question, answer, history = await run_with_sentinels(encrypted)
    raw = history.SerializeToString()
    assert question.encode() not in raw and answer.encode() not in raw
    payloads = list(all_payloads(history))
    references = [p for p in payloads if p.metadata.get("messageType") == REFERENCE_TYPE]
    sealed = [p for p in payloads if p.metadata.get("encoding") == ENCODING]
    assert references and sealed, "both inline and claim-checked payloads occur"
    assert len(references) + len(sealed) == len(payloads), "every payload is encrypted or a reference"
    blobs = [p for p in encrypted.store_root.rglob("*") if p.is_file()]
    assert blobs
    for blob in blobs:
        data = blob.read_bytes()
        assert question.encode() not in data and answer.encode() not in data
        stored = Payload()
        stored.ParseFromString(data)
        assert stored.metadata["encoding"] == ENCODING


async def test_failure_messages_are_encrypted_too(encrypted: Encrypted) -> None:
    tool = f"no_such_tool_{uuid.uuid4().hex[:12]}"
    handle = await start_run(encrypted.client, encrypted.queue, [turn("never")], tools=[tool])
    with pytest.raises(WorkflowFailureError) as caught:
        await encrypted.client.get_workflow_handle(handle.id).result()
    assert tool in str(caught.value.cause), "the encrypting client reads the real message"
    events = (await encrypted.raw.get_workflow_handle(handle.id).fetch_history()).events
    assert tool.encode() not in History(events=events).SerializeToString()


# ---- the codec server and `client.py payload` ---------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cli_env(encrypted: Encrypted, with_keys: bool = True) -> dict[str, str]:
    env = {**os.environ, "REACT_PAYLOAD_STORE": f"file:{encrypted.store_root}"}
    env["REACT_ENCRYPTION_KEYS"] = encrypted.keys if with_keys else ""
    return env


@pytest_asyncio.fixture(loop_scope="session")
async def codec_url(encrypted: Encrypted) -> AsyncIterator[str]:
    """`client.py codec-server` running as its own process on a free port."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable, "client.py", "codec-server", "--port", str(port), cwd=REPO, env=cli_env(encrypted)
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(200):
                try:
                    async with http.get(f"{url}/health") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("the codec server did not start")
        yield url
    finally:
        server.terminate()
        await server.wait()


async def post(
    url: str, payloads: list[Payload], origin: str = "http://localhost:8233"
) -> tuple[int, Any, Any]:
    body = json_format.MessageToJson(Payloads(payloads=payloads))
    headers = {"Content-Type": "application/json", "X-Namespace": "default", "Origin": origin}
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as response:
        return response.status, response.headers, await response.text()


async def test_codec_server_decodes_history_payloads_for_the_web_ui(
    encrypted: Encrypted, codec_url: str
) -> None:
    question, answer, history = await run_with_sentinels(encrypted)
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads[0]
    assert started.metadata["messageType"] == REFERENCE_TYPE, "the run input was claim-checked"
    status, headers, text = await post(f"{codec_url}/decode", [started])
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://localhost:8233"
    decoded = json_format.Parse(text, Payloads()).payloads
    assert decoded[0].metadata["encoding"] == b"json/plain"
    assert question.encode() in decoded[0].data and answer.encode() in decoded[0].data

    status, _, text = await post(f"{codec_url}/decode?preserveStorageRefs=true", [started])
    assert status == 200 and json_format.Parse(text, Payloads()).payloads == [started]
    status, _, text = await post(f"{codec_url}/default/download", [started])
    [downloaded] = json_format.Parse(text, Payloads()).payloads
    assert status == 200 and question.encode() in downloaded.data

    status, _, text = await post(f"{codec_url}/encode", [plain("to the UI and back")])
    [sealed] = json_format.Parse(text, Payloads()).payloads
    assert status == 200 and sealed.metadata[KEY_ID_METADATA] == b"k1"
    status, _, text = await post(f"{codec_url}/decode", [sealed])
    assert json_format.Parse(text, Payloads()).payloads == [plain("to the UI and back")]


async def test_codec_server_cors_and_bad_requests(codec_url: str) -> None:
    preflight = {"Origin": "http://localhost:8233", "Access-Control-Request-Method": "POST"}
    async with aiohttp.ClientSession() as http:
        async with http.options(f"{codec_url}/decode", headers=preflight) as allowed:
            assert allowed.status == 204
            assert "X-Namespace" in allowed.headers["Access-Control-Allow-Headers"]
        async with http.options(
            f"{codec_url}/decode", headers={**preflight, "Origin": "http://evil.test"}
        ) as no:
            assert no.status == 403 and "Access-Control-Allow-Origin" not in no.headers
        async with http.post(f"{codec_url}/decode", data="not json") as bad:
            assert bad.status == 400 and "expected" in (await bad.json())["error"]
    status, _, text = await post(f"{codec_url}/download", [plain("inline")])
    assert status == 400 and "all payloads must be storage references" in text
    lost = Payload(metadata={"encoding": b"json/protobuf", "messageType": REFERENCE_TYPE})
    lost.data = json.dumps({"driverName": "react.payload-store", "claimData": {"sha256": "0" * 64}}).encode()
    status, _, text = await post(f"{codec_url}/download", [lost])
    assert status == 404 and f"sha256:{'0' * 64} is missing" in text
    status, _, text = await post(f"{codec_url}/decode", [lost])
    assert status == 200 and json_format.Parse(text, Payloads()).payloads == [lost], "kept, not an error"
    [foreign] = await AesGcmCodec([EncryptionKey("k9", b"\x09" * 32)]).encode([plain("x")])
    status, _, text = await post(f"{codec_url}/decode", [foreign], origin="http://evil.test")
    assert status == 422 and "'k9'" in json.loads(text)["error"]


async def test_payload_command_prints_a_stored_payload_decrypted(encrypted: Encrypted) -> None:
    _, answer, history = await run_with_sentinels(encrypted)
    completed = history.events[-1].workflow_execution_completed_event_attributes.result.payloads[0]
    digest = json.loads(completed.data)["claimData"]["sha256"]
    shown = await cli(encrypted, "payload", digest)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["outcome"]["status"] == "completed" and answer in shown.stdout
    locked = await cli(encrypted, "payload", f"sha256:{digest}", with_keys=False)
    assert locked.returncode == 1 and "the payload is encrypted: set REACT_ENCRYPTION_KEYS" in locked.stderr
    missing = await cli(encrypted, "payload", "0" * 64)
    assert (
        missing.returncode == 1 and f"sha256:{'0' * 64} is missing from the payload store" in missing.stderr
    )
    assert missing.stderr.count("\n") == 1, "one line"
    not_a_digest = await cli(encrypted, "payload", "../../etc/passwd")
    assert not_a_digest.returncode == 1 and "is not a SHA-256 digest" in not_a_digest.stderr


async def cli(encrypted: Encrypted, *args: str, with_keys: bool = True) -> subprocess.CompletedProcess[str]:
    """`client.py ARGS` as a process with the encrypted store's settings."""
    command = [sys.executable, "client.py", *args]
    env = cli_env(encrypted, with_keys)
    return await asyncio.to_thread(subprocess.run, command, cwd=REPO, env=env, capture_output=True, text=True)
