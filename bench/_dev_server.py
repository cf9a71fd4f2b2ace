"""The benchmarks' own Temporal dev servers and child processes, on free loopback ports.

They are stopped with the benchmark (even when it is killed -9), and their CPU time read from /proc.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from temporalio.client import Client


class BenchError(RuntimeError):
    """The benchmark cannot measure what it claims to (server down, a run did the wrong thing)."""


def free_ports(count: int) -> list[int]:
    """`count` TCP ports of 127.0.0.1 that nothing listens on right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


async def wait_for_server(
    address: str, timeout_s: float = 60, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Return once a Temporal frontend answers on `address`.

    Raises:
        BenchError: the process exited, or nothing answered within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BenchError(f"the dev server exited with code {process.returncode}")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(Client.connect(address), timeout=2)
            return
        await asyncio.sleep(0.3)
    raise BenchError(f"no Temporal server answered on {address} within {timeout_s:g}s")


SERVER_PIDS: dict[str, int] = {}
"""The process id of each dev server this benchmark started, by address (for its CPU time)."""


@contextlib.asynccontextmanager
async def dev_server(binary: str) -> AsyncIterator[str]:
    """`temporal server start-dev` on free loopback ports with a fresh SQLite file; yields its address."""
    with tempfile.TemporaryDirectory(prefix="bench-temporal-") as tmp:
        port, http_port, metrics_port = free_ports(3)
        address = f"127.0.0.1:{port}"
        command = [
            binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
            "--http-port", str(http_port), "--metrics-port", str(metrics_port), "--headless",
            "--db-filename", str(Path(tmp) / "bench.db"), "--log-level", "error",
        ]  # fmt: skip
        with (Path(tmp) / "server.log").open("wb") as log:
            # Started from the event loop's thread, which lives as long as the process: with
            # `setpriv --pdeathsig` the server is stopped even when this process is killed -9.
            process = subprocess.Popen(  # noqa: ASYNC220
                die_with_parent(command), stdout=log, stderr=subprocess.STDOUT
            )
            SERVER_PIDS[address] = process.pid  # setpriv execs the server: the same process
            try:
                await wait_for_server(address, process=process)
                yield address
            finally:
                SERVER_PIDS.pop(address, None)
                await asyncio.to_thread(_stop, process)


def server_cpu_s(address: str) -> float | None:
    """User + system CPU seconds the dev server at `address` has used (None: not ours, or not Linux)."""
    pid = SERVER_PIDS.get(address)
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def die_with_parent(command: list[str]) -> list[str]:
    """`command` under `setpriv --pdeathsig TERM` (where available): it stops when this process dies."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *command] if setpriv else command


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
