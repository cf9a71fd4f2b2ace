"""A throwaway `redis-server` on 127.0.0.1 for tests, benchmarks and local runs (Debian's `redis-server`).

No persistence (`--save ''`, no AOF): a live channel holds nothing durable, the runs' histories do.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

REDIS_BINARY = "redis-server"


def redis_binary() -> str:
    """The `redis-server` on PATH.

    Raises:
        FileNotFoundError: it is not installed (`scripts/setup.sh` installs Debian's).
    """
    found = shutil.which(REDIS_BINARY)
    if found is None:
        message = "redis-server is not installed: run scripts/setup.sh (apt-get install redis-server)"
        raise FileNotFoundError(message)
    return found


def start_redis(
    port: int, *, timeout_s: float = 10.0, extra_args: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `redis-server` on 127.0.0.1:`port` and return once it accepts connections."""
    command = [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    command += extra_args or []
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"redis-server did not start on port {port}")


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
