"""A real S3-compatible server (moto) on a free port of 127.0.0.1, for the tests that use the S3 store."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from moto.server import ThreadedMotoServer

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    # Never the instance-metadata lookup: no traffic off this machine.
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""Static test credentials, set in this process's environment while the server runs."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def moto_s3_endpoint() -> Iterator[str]:
    """Run moto's S3 server with `CREDENTIALS` in the environment; yields its endpoint URL."""
    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
