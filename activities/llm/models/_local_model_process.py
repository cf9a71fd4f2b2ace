"""The bundled model's server process on loopback: found, or started when a call needs it.

A process stops only the servers it started (`stop_started`, also at exit).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from activities.llm.models._local_model_install import (
    BUNDLED_ALIAS,
    DEFAULT_PORT,
    LOG_FILE,
    START_TIMEOUT_S,
    LocalModelError,
    missing_install,
)

_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost"})


def loopback_port(api_base: str) -> int | None:
    """The unprivileged port of an http URL on this machine's loopback, else None (not ours to serve)."""
    parts = urlsplit(api_base)
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return port if port is not None and port >= 1024 else None


def served_models(api_base: str, timeout_s: float = 2.0) -> list[str] | None:
    """The model ids an OpenAI-compatible server at `api_base` lists; None when nothing listens.

    Anything else that answers there (another kind of server, a hung one) gives `[]`.
    """
    import httpx  # here, not at the top: the worker imports this module at start-up

    try:
        response = httpx.get(f"{api_base.rstrip('/')}/models", timeout=timeout_s)
    except httpx.ConnectError:
        return None
    except httpx.HTTPError:
        return []
    try:
        data: Any = response.json()
        return [str(item["id"]) for item in data["data"]]
    except (ValueError, KeyError, TypeError):
        return []


class LocalModelServer:
    """A llama-cpp-python server process serving the bundled model, started and stopped by us."""

    def __init__(self, port: int = DEFAULT_PORT, log_file: Path = LOG_FILE) -> None:
        self.port = port
        self.api_base = f"http://127.0.0.1:{port}/v1"
        self.log_file = log_file
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        """Whether the process this object started is still running."""
        return self.process is not None and self.process.poll() is None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the server and wait until it serves the model.

        Raises:
            LocalModelError: not installed, or the server exited or did not answer in time
                (the message quotes the end of its log).
        """
        problem = missing_install()
        if problem:
            raise LocalModelError(problem)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "activities.llm.models.local_model",
            "serve",
            "--port",
            str(self.port),
        ]
        command += ["--parent-pid", str(os.getpid())]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=Path(__file__).resolve().parents[3],  # the repository root: `-m activities...` resolves
                env=_server_environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal reaches us, and we stop it
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise LocalModelError(f"the local model server exited ({self._log_tail()})")
            if BUNDLED_ALIAS in (served_models(self.api_base, timeout_s=1.0) or []):
                return
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(f"the local model server did not answer in {timeout_s:g}s ({self._log_tail()})")

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the process this object started (SIGTERM, then SIGKILL); nothing else."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_file.read_text(errors="replace").strip().splitlines()
        except OSError:
            return f"no log at {self.log_file}"
        return f"see {self.log_file}: " + " | ".join(text[-lines:])


def _server_environment() -> dict[str, str]:
    """A minimal environment: the server reads settings (API_KEY, PORT, ...) from it, and needs no secret."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    return {name: os.environ[name] for name in keep if name in os.environ}


_lock = threading.Lock()
_started: dict[int, LocalModelServer] = {}


def ensure_server(api_base: str) -> None:
    """Make sure the bundled model is served at `api_base` (a loopback URL), starting it if needed.

    A server that already serves the model there is used as it is (this process never
    stops what it did not start). A server of ours that died is started again.

    Raises:
        LocalModelError: not installed, the port is taken by another program, or the
            server failed to start.
    """
    port = loopback_port(api_base)
    if port is None:
        return
    with _lock:
        ours = _started.get(port)
        if ours is not None and ours.alive:
            return
        models = served_models(api_base)
        if models is not None:
            if BUNDLED_ALIAS in models:
                return
            serving = f"it serves {', '.join(models)}" if models else "it is not a model server"
            raise LocalModelError(
                f"port {port} is in use by another program ({serving}); point --api-base or "
                "REACT_API_BASE at a free loopback port, e.g. http://127.0.0.1:8766/v1"
            )
        server = LocalModelServer(port)
        try:
            server.start()
        except LocalModelError:
            if BUNDLED_ALIAS in (served_models(api_base) or []):
                return  # another process started one at the same moment: use it
            raise
        _started[port] = server


def started_server(port: int) -> LocalModelServer | None:
    """The server this process started on `port`, if any."""
    with _lock:
        return _started.get(port)


def stop_started() -> None:
    """Stop every server this process started (safe to call twice)."""
    with _lock:
        for server in _started.values():
            server.stop()
        _started.clear()


atexit.register(stop_started)
