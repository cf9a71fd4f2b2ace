"""Payload encryption: the AES-GCM codec, key settings, and a whole run whose history holds no plaintext.

Also the codec server and `client.py payload` over real processes and HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from google.protobuf import json_format
from google.protobuf.message import Message
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import RequestReceived
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowFailureError
from temporalio.service import TLSConfig

from runtime.codec import ENCODING, KEY_ID_METADATA, AesGcmCodec, PayloadDecryptionError
from runtime.connection import build_data_converter, connect
from runtime.settings import EncryptionKey, Settings, SettingsError, load_settings
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run, turn
from worker import build_worker

REPO = Path(__file__).resolve().parent.parent
K1 = EncryptionKey("k1", b"\x01" * 32)
K2 = EncryptionKey("k2", b"\x02" * 32)
REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())


def entry(key: EncryptionKey) -> str:
    return f"{key.key_id}:{base64.b64encode(key.material).decode()}"


# ---- the codec ----------------------------------------------------------------------------------


async def test_encrypts_with_the_first_key_and_round_trips() -> None:
    codec = AesGcmCodec([K1])
    [sealed] = await codec.encode([plain("the secret answer")])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID_METADATA] == b"k1"
    assert b"secret" not in sealed.SerializeToString()
    [again] = await codec.encode([plain("the secret answer")])
    assert again.data != sealed.data, "a fresh nonce every time"
    assert await codec.decode([sealed]) == [plain("the secret answer")]


async def test_rotation_reads_old_keys_and_writes_with_the_new_one() -> None:
    [old] = await AesGcmCodec([K1]).encode([plain("written before rotation")])
    rotated = AesGcmCodec([K2, K1])
    assert await rotated.decode([old]) == [plain("written before rotation")]
    [new] = await rotated.encode([plain("after")])
    assert new.metadata[KEY_ID_METADATA] == b"k2"
    with pytest.raises(PayloadDecryptionError, match=r"key id 'k2'.*holds: k1.*add that key"):
        await AesGcmCodec([K1]).decode([new])


async def test_tampering_a_wrong_key_and_a_swapped_key_id_are_refused() -> None:
    [sealed] = await AesGcmCodec([K1]).encode([plain("x")])
    tampered = Payload(metadata=sealed.metadata, data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([K1]).decode([tampered])
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([EncryptionKey("k1", b"\x09" * 32)]).decode([sealed])
    relabelled = Payload(metadata={**sealed.metadata, KEY_ID_METADATA: b"k2"}, data=sealed.data)
    with pytest.raises(PayloadDecryptionError, match="does not decrypt"):
        await AesGcmCodec([K2, EncryptionKey("k1", K2.material)]).decode([relabelled])
    with pytest.raises(PayloadDecryptionError, match="truncated"):
        await AesGcmCodec([K1]).decode([Payload(metadata=sealed.metadata, data=b"short")])


async def test_unencrypted_payloads_pass_through_decode() -> None:
    assert await AesGcmCodec([K1]).decode([plain("old")]) == [plain("old")]


def test_key_settings_parse_and_rotation_order() -> None:
    urlsafe = "k3:" + base64.urlsafe_b64encode(b"\xfb" * 32).decode()
    settings = load_settings({"REACT_ENCRYPTION_KEYS": f" {entry(K2)} , {entry(K1)},{urlsafe}"})
    assert [k.key_id for k in settings.encryption_keys] == ["k2", "k1", "k3"]
    assert settings.encryption_keys[2].material == b"\xfb" * 32
    assert settings.encryption_on and settings.codec_endpoint == "http://localhost:8081"
    assert not load_settings({}).encryption_on and load_settings({}).codec_endpoint is None
    assert "material" not in repr(settings.encryption_keys[0])


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("AAAA", "entry 1 is not <id>:<base64 key>"),
        (f"{entry(K1)},bad id:AAAA", "entry 2 is not"),
        (f"{entry(K1)},{entry(K1)}", "'k1' appears twice"),
        ("k1:not*base64!", "'k1' is not valid base64"),
        ("k1:" + base64.b64encode(b"\x05" * 16).decode(), "is 16 bytes; AES-256 needs 32"),
    ],
)
def test_bad_keys_are_one_line_that_never_shows_key_material(value: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"REACT_ENCRYPTION_KEYS": value})
    message = str(caught.value)
    assert message.startswith("REACT_ENCRYPTION_KEYS: ") and fragment in message
    assert base64.b64encode(K1.material).decode() not in message and "BQUF" not in message


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
    result: Any = await encrypted.client.get_workflow_handle(handle.id).result()
    assert result["status"] == "completed" and answer in result["result"]
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
    assert json.loads(shown.stdout)["status"] == "completed" and answer in shown.stdout
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


def test_settings_without_keys_keep_payloads_plain() -> None:
    assert build_data_converter(Settings()).payload_codec is None


# ---- TLS and API key ----------------------------------------------------------------------------


def make_pki(folder: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())

    def certificate(subject: str, key: ec.EllipticCurvePrivateKey, ca: bool) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "react-test-ca")]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )

    files: dict[str, Path] = {}

    def write(name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        files[f"{name}.pem"] = folder / f"{name}.pem"
        files[f"{name}.pem"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[f"{name}.key"] = folder / f"{name}.key"
        files[f"{name}.key"].write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )

    write("ca", certificate("react-test-ca", ca_key, ca=True).sign(ca_key, hashes.SHA256()), ca_key)
    for name, usage, names in (
        ("server", ExtendedKeyUsageOID.SERVER_AUTH, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
        ("client", ExtendedKeyUsageOID.CLIENT_AUTH, [x509.DNSName("react-test-client")]),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = certificate(f"react-test-{name}", key, ca=False)
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        write(name, builder.sign(ca_key, hashes.SHA256()), key)
    return files


class GrpcProbe:
    """A real TLS + HTTP/2 server on 127.0.0.1 that requires a client certificate.

    It records each request's client certificate and headers and answers every call UNAUTHENTICATED.
    """

    def __init__(self, pki: dict[str, Path]) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(pki["server.pem"], pki["server.key"])
        self.context.load_verify_locations(pki["ca.pem"])
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.context.set_alpn_protocols(["h2"])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def __enter__(self) -> GrpcProbe:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join()
        self.listener.close()

    def serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            try:
                with self.context.wrap_socket(connection, server_side=True) as tls:
                    self.answer(tls)
            except (ssl.SSLError, OSError):
                continue

    def answer(self, tls: ssl.SSLSocket) -> None:
        client_name = common_name(tls)
        h2 = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        h2.initiate_connection()
        tls.sendall(h2.data_to_send())
        tls.settimeout(5)
        while data := tls.recv(65536):
            for event in h2.receive_data(data):
                if isinstance(event, RequestReceived):
                    headers = {str(k): str(v) for k, v in event.headers or []}
                    self.seen.append((client_name, headers))
                    reply = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "16")]
                    h2.send_headers(event.stream_id, reply, end_stream=True)
            tls.sendall(h2.data_to_send())


def common_name(tls: ssl.SSLSocket) -> str:
    """The CN of the peer's certificate."""
    peer: dict[str, Any] = dict(tls.getpeercert() or {})
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


async def test_tls_client_certificate_ca_and_api_key_reach_the_server(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    settings = load_settings(
        {
            "REACT_PAYLOAD_STORE": f"file:{tmp_path / 'payloads'}",
            "TEMPORAL_TLS_CA": str(pki["ca.pem"]),
            "TEMPORAL_TLS_CERT": str(pki["client.pem"]),
            "TEMPORAL_TLS_KEY": pki["client.key"].read_text(),
            "TEMPORAL_API_KEY": "test-api-key-7f3a",
        }
    )
    with GrpcProbe(pki) as probe:
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(connect(f"127.0.0.1:{probe.port}", settings=settings), 30)
        without_ca = load_settings({"TEMPORAL_API_KEY": "k", "REACT_PAYLOAD_STORE": f"file:{tmp_path}"})
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(connect(f"127.0.0.1:{probe.port}", settings=without_ca), 30)
    assert probe.seen, "the client completed mutual TLS (its certificate, our CA) and sent a call"
    common_names = {name for name, _ in probe.seen}
    assert common_names == {"react-test-client"}, "only the configured client ever got through"
    _, headers = probe.seen[0]
    assert headers["authorization"] == "Bearer test-api-key-7f3a"
    assert headers[":path"].endswith("/GetSystemInfo")


def test_tls_settings(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    assert load_settings({}).tls is False
    assert load_settings({"TEMPORAL_API_KEY": "abc"}).tls is True
    assert load_settings({"TEMPORAL_API_KEY": "abc", "TEMPORAL_TLS": "false"}).tls is False
    assert load_settings({"TEMPORAL_TLS": "yes"}).tls is True
    tls = load_settings(
        {
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki["ca.pem"]),
            "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
        }
    ).tls
    assert isinstance(tls, TLSConfig)
    assert tls.server_root_ca_cert == pki["ca.pem"].read_bytes() and tls.domain == "temporal.internal"
    assert tls.client_cert is None
    assert "abc" not in repr(load_settings({"TEMPORAL_API_KEY": "abc"}))


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        (
            {"TEMPORAL_TLS_CERT": "{client_pem}"},
            "TEMPORAL_TLS_KEY",
            "is required when TEMPORAL_TLS_CERT is set",
        ),
        (
            {"TEMPORAL_TLS_KEY": "{client_key}"},
            "TEMPORAL_TLS_CERT",
            "is required when TEMPORAL_TLS_KEY is set",
        ),
        ({"TEMPORAL_TLS_CA": "/no/such/ca.pem"}, "TEMPORAL_TLS_CA", "cannot read '/no/such/ca.pem'"),
        ({"TEMPORAL_TLS_CA": "{notes}"}, "TEMPORAL_TLS_CA", "is not a PEM file"),
        ({"TEMPORAL_TLS": "maybe"}, "TEMPORAL_TLS", "expected true or false"),
        (
            {"TEMPORAL_TLS": "0", "TEMPORAL_TLS_CA": "{ca_pem}"},
            "TEMPORAL_TLS",
            "is false, but TLS certificates",
        ),
        ({"TEMPORAL_API_KEY": "key\nmore"}, "TEMPORAL_API_KEY", "contains blanks or line breaks"),
    ],
)
def test_bad_tls_settings_name_the_variable(
    tmp_path: Path, env: dict[str, str], variable: str, fragment: str
) -> None:
    files = {name: str(path) for name, path in make_pki(tmp_path).items()}
    (tmp_path / "notes.txt").write_text("hello")
    files["notes"] = str(tmp_path / "notes.txt")
    with pytest.raises(SettingsError) as caught:
        load_settings(
            {k: v.format(**{n.replace(".", "_"): p for n, p in files.items()}) for k, v in env.items()}
        )
    assert str(caught.value).startswith(f"{variable}: ") and fragment in str(caught.value)


async def test_failure_messages_are_encrypted_too(encrypted: Encrypted) -> None:
    tool = f"no_such_tool_{uuid.uuid4().hex[:12]}"
    handle = await start_run(encrypted.client, encrypted.queue, [turn("never")], tools=[tool])
    with pytest.raises(WorkflowFailureError) as caught:
        await encrypted.client.get_workflow_handle(handle.id).result()
    assert tool in str(caught.value.cause), "the encrypting client reads the real message"
    events = (await encrypted.raw.get_workflow_handle(handle.id).fetch_history()).events
    assert tool.encode() not in History(events=events).SerializeToString()
