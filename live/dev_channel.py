"""The embedded default's live channel: a `redis-server` beside the dev server, found with no setting.

The rule, for every client of a dev server (the worker's plugin, the typed client, the CLI, the
gateway, the test environment): when `REACT_LIVE_URL` is unset and the client's Temporal address
is on loopback, the channel is the one recorded for that address's port in
`<repo>/.temporal/live/<port>.json` (`{"url": "redis://127.0.0.1:<p>/0", "pid": <owner>}`), as long
as the process that recorded it (the owner) is alive. The owner is the process that started or
found the dev server: `worker.py --dev` (`hosting.worker_process`) and `testing.AgentTestEnvironment`.
Each starts (or finds, when the record's server still answers) a `redis-server` when one is
installed (`live.dev_redis`), records it, and removes the record when it stops. Without
`redis-server` nothing is recorded and runs stream through history, as before.

`REACT_LIVE_URL` always wins: a `redis://` URL names the channel, `off` turns it off (no record
is read, nothing is started).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

from contracts.whole_numbers import whole_number
from live.channel import LIVE_URL_ENV, live_url

RECORDS = Path(__file__).resolve().parent.parent / ".temporal" / "live"
"""Where the dev servers' channels are recorded, one file per Temporal port."""
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def loopback_port(address: str) -> int | None:
    """The port of a loopback `host:port` Temporal address (None: not loopback, or no port)."""
    host, _, port = address.rpartition(":")
    if host not in LOOPBACK:
        return None
    return whole_number(port)


def record_file(address: str) -> Path | None:
    """The record of the channel beside the dev server at `address` (None: not a loopback address)."""
    port = loopback_port(address)
    return None if port is None else RECORDS / f"{port}.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded_url(address: str) -> str | None:
    """The channel recorded for the dev server at `address`, if its owner is alive (else None)."""
    path = record_file(address)
    if path is None:
        return None
    try:
        record = json.loads(path.read_text())
        url, pid = str(record["url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if _pid_alive(pid) else None


def channel_url(address: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The live channel for a client of `address`: `REACT_LIVE_URL`, else the dev server's record.

    Raises:
        SettingsError: `REACT_LIVE_URL` names something other than a Redis URL or `off`.
    """
    if ((environ if environ is not None else os.environ).get(LIVE_URL_ENV) or "").strip():
        return live_url(environ)  # explicit: the URL, or None for `off`
    return recorded_url(address) if address else None


def record(address: str, url: str) -> None:
    """Record `url` as the channel of the dev server at `address`, owned by this process."""
    path = record_file(address)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"url": url, "pid": os.getpid()}))
    partial.replace(path)  # a reader never sees half a record


def forget(address: str) -> None:
    """Remove this process's record for `address` (another owner's is left alone)."""
    path = record_file(address)
    if path is None:
        return
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if int(json.loads(path.read_text())["pid"]) == os.getpid():
            path.unlink()


def redis_installed() -> bool:
    """Whether a `redis-server` is on PATH (`scripts/setup.sh` installs Debian's)."""
    from live.dev_redis import REDIS_BINARY

    return shutil.which(REDIS_BINARY) is not None


def answers(url: str, timeout_s: float = 0.3) -> bool:
    """Whether something accepts connections at the `redis://host:port/...` of `url`."""
    rest = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    host, _, port = rest.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port or 6379)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def _raw_record(address: str) -> str | None:
    """The URL recorded for `address`, whatever its owner's state."""
    path = record_file(address)
    if path is None:
        return None
    try:
        return str(json.loads(path.read_text())["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_dev_channel(address: str) -> tuple[str | None, subprocess.Popen[bytes] | None]:
    """Find or start the `redis-server` beside the dev server at `address`, and record it.

    Returns (the channel's URL, the process this call started: the caller stops it and calls
    `forget`); (None, None) when `REACT_LIVE_URL` is set (it wins), `address` is not loopback,
    or `redis-server` is not installed. A recorded server that still answers is found, not
    started again (e.g. one a previous `worker.py --dev` left running).
    """
    if (os.environ.get(LIVE_URL_ENV) or "").strip() or record_file(address) is None:
        return None, None
    if not redis_installed():
        return None, None
    found = _raw_record(address)
    if found is not None and answers(found):
        record(address, found)
        return found, None
    from live.dev_redis import free_port, start_redis

    port = free_port()
    process = start_redis(port)
    url = f"redis://127.0.0.1:{port}/0"
    record(address, url)
    return url, process
