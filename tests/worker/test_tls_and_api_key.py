"""TLS and an API key toward Temporal: a real mutual-TLS HTTP/2 server sees the client certificate and key."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import RequestReceived
from temporalio.service import TLSConfig

from hosting.connection import connect
from settings.deployment import load_settings
from settings.env_values import SettingsError

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
