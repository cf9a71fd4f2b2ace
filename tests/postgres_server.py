"""A throwaway PostgreSQL server for the tests: Debian's `postgresql` 15 on a loopback port.

Its own data directory in a temporary folder, trust authentication on 127.0.0.1 only, no fsync.
PostgreSQL refuses to run as root, so as root the folder is handed to the `postgres` user and
`initdb` and `postgres` run as that user (`runuser`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields its URL (`postgresql://postgres@127.0.0.1:<port>/postgres`)."""
    folder = Path(tempfile.mkdtemp(prefix="react-test-pg-"))
    data = folder / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        _as_postgres([str(BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                      "--locale=C", "--encoding=UTF8"]),
        check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    server = subprocess.Popen(
        _as_postgres([str(BIN / "postgres"), "-D", str(data), "-p", str(port), "-k", str(folder),
                      "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(url: str, name: str) -> str:
    """A new empty database `name` on the server of `url`; its URL."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())  # pyright: ignore[reportArgumentType]
        conn.execute(f'CREATE DATABASE "{name}"'.encode())  # pyright: ignore[reportArgumentType]
    return url.rsplit("/", 1)[0] + f"/{name}"
