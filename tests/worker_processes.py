"""`python worker.py` as a child process of a test: started, awaited until it polls, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class WorkerProcess:
    """`python worker.py` on the shared task queue and store, as a deployment runs it."""

    def __init__(
        self,
        name: str,
        address: str,
        queue: str,
        env: dict[str, str],
        folder: Path,
        tools: tuple[str, ...] = ("tests.agent_tools", "tests.many_workers_tools"),
    ) -> None:
        """Start it (its output goes to `folder/worker-<name>.log`); `tools`: the modules of its tools."""
        self.log = folder / f"worker-{name}.log"
        command = [sys.executable, "worker.py", "--address", address, "--task-queue", queue]
        for module in tools:
            command += ["--tools", module]
        setpriv = shutil.which("setpriv")  # the worker dies with this test process, whatever happens
        if setpriv:
            command = [setpriv, "--pdeathsig", "KILL", "--", *command]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def polling(self) -> None:
        """Return once the worker polls its task queue."""
        while b"worker polling task queue" not in self.log.read_bytes():
            assert self.process.poll() is None, f"worker exited: {self.log.read_text()[-2000:]}"
            await asyncio.sleep(0.1)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
