"""The body of the bundled model's server process: llama-cpp-python's OpenAI-compatible app on loopback."""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import urllib.request
from typing import Any, cast

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


def readable_result(content: str) -> str:
    """A tool message's content as a small model can read it: the value, not the envelope.

    `{"ok": true, "result": 391}` is `391` (a string result as it is), `{"ok": false, "error":
    {"message": ...}}` is `error: <message>`; a note is kept after the value. Anything else is
    left as it is.
    """
    try:
        envelope = json.loads(content)
    except ValueError:
        return content
    if not isinstance(envelope, dict):
        return content
    fields = cast(dict[str, Any], envelope)
    if not isinstance(fields.get("ok"), bool):
        return content
    if fields["ok"]:
        value = fields.get("result")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    else:
        error = fields.get("error")
        message = cast(dict[str, Any], error).get("message") if isinstance(error, dict) else None
        text = f"error: {message or json.dumps(error, ensure_ascii=False)}"
    note = fields.get("note")
    return f"{text} ({note})" if isinstance(note, str) else text


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages SmolLM2's chat template can render: it knows no tool calls and no tool role.

    A tool result becomes a user message with the result's value (`readable_result`) and the
    turn's question, asking for an answer in a sentence: the model repeats the last line it
    sees, so that line must lead to words, not JSON (`Tool result: 391. Now answer my question
    "What is 17 * 23?" in one full sentence.` is answered `The answer is 391.`). An assistant
    message that only calls tools is left out.
    """
    plain: list[dict[str, Any]] = []
    question = ""
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            result = readable_result(content if isinstance(content, str) else json.dumps(content))
            ask = f' Now answer my question "{question}" in one full sentence.' if question else ""
            plain.append({"role": "user", "content": f"Tool result: {result}.{ask}"})
        elif content or not message.get("tool_calls"):
            if role == "user" and isinstance(content, str):
                question = content
            plain.append({"role": role, "content": content or ""})
    return plain


def _warm_up(port: int, timeout_s: float = 120.0) -> None:
    """Once the server listens, answer one token: the first real call then finds the model loaded.

    llama.cpp maps the model file and sets up its buffers on the first completion (2-3 s on a
    loaded 2-core machine); a server started beside the worker pays it before any run needs it.
    """
    base = f"http://127.0.0.1:{port}/v1"
    body = json.dumps(
        {"model": BUNDLED_ALIAS, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    ).encode()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(
                f"{base}/chat/completions", body, {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=timeout_s):
                return
        except (OSError, ValueError):
            time.sleep(0.2)


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
    threading.Thread(target=_warm_up, args=(port,), daemon=True).start()
    uvicorn.run(application, host="127.0.0.1", port=port, log_level="warning")
