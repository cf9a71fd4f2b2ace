"""The body of the bundled model's server process: llama-cpp-python's OpenAI-compatible app on loopback."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from typing import Any

from activities.llm.models._local_model_install import (
    BUNDLED_ALIAS,
    CHAT_FORMAT,
    CONTEXT_TOKENS,
    missing_install,
    model_file,
)


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
