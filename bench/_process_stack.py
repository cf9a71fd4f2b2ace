"""A dev server and a worker process for the benchmarks, each killable (SIGKILL) and restartable.

Used by `bench.crash` and `bench.load`: a `temporal server start-dev` with a SQLite file
and the product's `worker.py` as a separate process (tools from `tests.agent_tools`).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench._dev_server import BenchError, die_with_parent, free_ports

REPO = Path(__file__).resolve().parent.parent


class Stack:
    """The dev server and the worker process, each killable and restartable."""

    def __init__(self, work: Path) -> None:
        self.work = work
        port, self.ui_port = free_ports(2)
        self.address = f"127.0.0.1:{port}"
        self.queue = f"crash-{uuid.uuid4().hex[:8]}"
        self.effects = work / "effects.jsonl"
        self.env = {
            **os.environ,
            "REACT_PAYLOAD_STORE": f"file:{work / 'store'}",
            "REACT_TEST_EFFECTS_FILE": str(self.effects),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        self.server: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.workers_started = 0

    async def start_server(self) -> None:
        """Start the dev server on the stack's port and SQLite file (the same every time)."""
        from hosting.dev_server import ensure_dev_server

        self.server = await ensure_dev_server(self.address, self.work / "dev.db", self.ui_port)
        if self.server is None:
            raise BenchError(f"another server already answers on {self.address}")

    def kill_server(self) -> None:
        """SIGKILL the dev server."""
        if self.server is not None:
            self.server.kill()
            self.server.wait()
            self.server = None

    async def start_worker(self) -> float:
        """Start `worker.py`; return once it polls (seconds it took)."""
        self.workers_started += 1
        log_path = self.work / f"worker-{self.workers_started}.log"
        command = [sys.executable, "worker.py", "--address", self.address, "--task-queue", self.queue]
        command += ["--tools", "tests.agent_tools"]
        started = time.monotonic()
        with log_path.open("wb") as log:
            command = die_with_parent(command)
            self.worker = subprocess.Popen(  # noqa: ASYNC220 (returns at once)
                command, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        while b"worker polling task queue" not in log_path.read_bytes():
            if self.worker.poll() is not None:
                raise BenchError(f"the worker exited with {self.worker.returncode}; see {log_path}")
            if time.monotonic() - started > 90:
                raise BenchError(f"the worker did not poll within 90 s; see {log_path}")
            await asyncio.sleep(0.1)
        return time.monotonic() - started

    def kill_worker(self) -> None:
        """SIGKILL the worker process."""
        if self.worker is not None and self.worker.poll() is None:
            os.kill(self.worker.pid, signal.SIGKILL)
            self.worker.wait()
        self.worker = None

    def stop(self) -> None:
        """Stop whatever still runs."""
        self.kill_worker()
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill_server()

    def remove_work(self) -> None:
        """Delete the work folder (database, store, logs)."""
        shutil.rmtree(self.work, ignore_errors=True)

    def effects_by_label(self) -> dict[str, list[str]]:
        """The idempotency key of every execution of `record_effect`, by call label."""
        found: dict[str, list[str]] = {}
        if self.effects.exists():
            for line in self.effects.read_text().splitlines():
                record = json.loads(line)
                found.setdefault(record["label"], []).append(record["key"])
        return found


def machine() -> str:
    """When and where: UTC time, cores, CPU model, load average, Python and temporalio versions."""
    from importlib.metadata import version

    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line), "?"
    )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores ({model}), "
        f"load average {load}, Python {platform.python_version()}, temporalio {version('temporalio')}"
    )
