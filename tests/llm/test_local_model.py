"""The bundled local model through a real llama.cpp server (llama-cpp-python) and the real worker.

Mechanics only, never answer quality: a 135M model's answers are not the point. Each
test uses its own free loopback port, so a developer's running demo (port 8765) is
never touched.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.llm.model_check import key_problem
from activities.llm.models.local_model import (
    BUNDLED_ALIAS,
    BUNDLED_MODEL,
    DEFAULT_API_BASE,
    LocalModelServer,
    ensure_server,
    plain_messages,
    prepare_completion,
    readable_result,
    reset_tool_choice,
    served_models,
    started_server,
    stop_started,
)
from cli.demo import DEMO_QUERY, DEMO_TOOL, local_model_settings
from cli.errors import CliError
from cli.inputs import AgentFlags, resolve_config
from contracts import RunResult

ROOT = Path(__file__).resolve().parents[2]
FORCED = {"type": "function", "function": {"name": "calculator"}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def wait_until(check: Any, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return bool(check())


def process_running(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


@pytest.fixture
def stop_servers() -> Iterator[None]:
    yield
    stop_started()


async def test_a_run_on_the_bundled_model_calls_a_tool_and_answers(
    client: Client, task_queue: str, stop_servers: None
) -> None:
    port = free_port()
    config = local_model_settings([], base_url(port))
    started = time.monotonic()
    handle = await client.start_workflow(
        "ReActRun",
        {"query": DEMO_QUERY, "config": config},
        id=f"test-local-model-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
    )
    result = RunResult.model_validate(await handle.result())
    print(f"bundled-model run: {time.monotonic() - started:.1f}s, answer {result.result!r}")
    assert result.status == "completed", result
    assert result.result, "the final answer is text"
    # The worker started the model server (on the run's port) and stops it by process id.
    server = started_server(port)
    assert server is not None and server.process is not None and server.alive
    pid = server.process.pid
    stop_started()
    assert not process_running(pid) and served_models(base_url(port)) is None

    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    names = [attributes.activity_type.name for attributes in scheduled]
    completed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]
    assert names.count("llm_call") >= 2 and names.count("run_tool") >= 1, names
    assert len(completed) == len(scheduled), "every LLM and tool activity completed"
    tool_inputs = [a.input.payloads[0].data for a in scheduled if a.activity_type.name == "run_tool"]
    assert all(DEMO_TOOL.encode() in data for data in tool_inputs)


def test_a_server_of_another_process_is_used_and_never_stopped_a_dead_one_of_ours_restarts(
    stop_servers: None,
) -> None:
    port = free_port()
    other = LocalModelServer(port)  # stands for a server another worker started
    other.start()
    try:
        ensure_server(base_url(port))
        assert started_server(port) is None, "an answering server is used as it is"
        stop_started()
        assert other.alive, "never stop what this process did not start"
    finally:
        other.stop()
    ensure_server(base_url(port))
    ours = started_server(port)
    assert ours is not None and ours.process is not None
    first_pid = ours.process.pid
    os.kill(first_pid, signal.SIGKILL)
    assert wait_until(lambda: not ours.alive)
    ensure_server(base_url(port))
    again = started_server(port)
    assert again is not None and again.process is not None and again.process.pid != first_pid
    assert BUNDLED_ALIAS in (served_models(base_url(port)) or [])
    stop_started()
    assert served_models(base_url(port)) is None


def test_the_server_exits_when_the_process_that_started_it_is_killed() -> None:
    port = free_port()
    starter = (
        "import sys, time; from activities.llm.models.local_model import ensure_server, started_server; "
        f"ensure_server({base_url(port)!r}); print(started_server({port}).process.pid, flush=True); "
        "time.sleep(600)"
    )
    parent = subprocess.Popen([sys.executable, "-c", starter], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        assert process_running(server_pid)
    finally:
        parent.kill()
        parent.wait()
    assert wait_until(lambda: not process_running(server_pid)), "the orphaned server exits by itself"
    assert served_models(base_url(port)) is None


class NotAModelServer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_a_port_taken_by_another_program_fails_fast_and_leaves_it_alone() -> None:
    squatter = ThreadingHTTPServer(("127.0.0.1", 0), NotAModelServer)
    threading.Thread(target=squatter.serve_forever, daemon=True).start()
    port = squatter.server_address[1]
    try:
        kwargs: dict[str, Any] = {"model": BUNDLED_MODEL, "api_base": base_url(port), "messages": []}
        with pytest.raises(ApplicationError) as caught:
            await prepare_completion(kwargs)
        assert caught.value.type == "local_model_unavailable" and caught.value.non_retryable
        assert f"port {port} is in use by another program" in str(caught.value)
        assert started_server(port) is None and served_models(base_url(port)) == []
    finally:
        squatter.shutdown()
        squatter.server_close()


def test_a_forced_tool_choice_holds_until_the_turn_has_a_tool_result() -> None:
    tools = [{"type": "function", "function": {"name": "calculator"}}]
    ask = [{"role": "user", "content": "q"}]
    called: list[dict[str, Any]] = [
        *ask,
        {"role": "assistant", "tool_calls": []},
        {"role": "tool", "content": "{}"},
    ]
    cases: list[tuple[list[dict[str, Any]], list[dict[str, Any]], object]] = [
        (ask, tools, FORCED),  # first call of the turn: forced
        (called, tools, "auto"),  # the turn has a tool result: the model may answer
        ([*called, {"role": "user", "content": "again"}], tools, FORCED),  # a new user turn
        (called, [], None),  # no tools: no tool_choice at all
    ]
    for messages, offered, expected in cases:
        kwargs: dict[str, Any] = {"messages": messages, "tools": offered, "tool_choice": FORCED}
        reset_tool_choice(kwargs)
        assert kwargs.get("tool_choice") == expected, (messages, offered)
    untouched: dict[str, Any] = {"messages": called, "tools": tools, "tool_choice": "none"}
    reset_tool_choice(untouched)
    assert untouched["tool_choice"] == "none"


def test_a_cloud_model_without_its_key_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert key_problem("openai/gpt-4o-mini") == (
        "model openai/gpt-4o-mini needs OPENAI_API_KEY in the worker's environment (not set)"
    )
    assert "ANTHROPIC_API_KEY" in (key_problem("anthropic/claude-3-5-haiku-latest") or "")
    assert "GEMINI_API_KEY" in (key_problem("gemini/gemini-2.0-flash") or "")
    assert "use hosted_vllm/qwen" in (key_problem("openai/qwen", api_base="http://127.0.0.1:8000/v1") or "")
    assert "not a litellm model string" in (key_problem("gpt-nonsense-9") or "")
    for keyless in ("ollama_chat/llama3.2", "hosted_vllm/qwen", "lm_studio/qwen", BUNDLED_MODEL, "scripted"):
        assert key_problem(keyless) is None, keyless
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert key_problem("openai/gpt-4o-mini") is None


DEMO_CHECK = [sys.executable, "-c", "import sys; from cli.demo import check; sys.exit(check())"]


def run_quietly(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_the_demo_and_the_worker_refuse_a_model_without_its_key_before_starting() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"REACT_MODEL": "anthropic/claude-3-5-haiku-latest"}
    check = run_quietly(DEMO_CHECK, env)
    line = "model anthropic/claude-3-5-haiku-latest needs ANTHROPIC_API_KEY in the worker's environment"
    assert check.returncode == 1 and check.stderr.strip().splitlines() == [f"error: {line} (not set)"]
    # The worker stops before it connects anywhere (this address has no server).
    worker = run_quietly([sys.executable, "worker.py", "--address", f"127.0.0.1:{free_port()}"], env)
    assert worker.returncode == 1 and worker.stderr.strip().splitlines()[-1] == f"worker: {line} (not set)"
    env.pop("REACT_MODEL")
    assert run_quietly(DEMO_CHECK, env).returncode == 0


def test_model_and_api_base_from_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REACT_MODEL", raising=False)
    monkeypatch.delenv("REACT_API_BASE", raising=False)
    config, demo = resolve_config(AgentFlags(tools=("search",)))
    assert demo and config.model == BUNDLED_MODEL and config.tools == [DEMO_TOOL, "search"]
    assert config.model_settings.extra == {"api_base": DEFAULT_API_BASE, "tool_choice": FORCED}
    config, _ = resolve_config(AgentFlags(api_base="http://127.0.0.1:9000/v1", system_prompt="terse"))
    assert config.model_settings.extra["api_base"] == "http://127.0.0.1:9000/v1"
    assert config.system_prompt == "terse"

    monkeypatch.setenv("REACT_MODEL", "hosted_vllm/qwen")
    monkeypatch.setenv("REACT_API_BASE", "http://127.0.0.1:8000/v1")
    config, demo = resolve_config(AgentFlags())
    assert not demo and config.model_settings.extra == {"api_base": "http://127.0.0.1:8000/v1"}
    config, _ = resolve_config(AgentFlags(model="openai/gpt-4o-mini"))
    assert config.model_settings.extra == {}, "REACT_API_BASE goes with REACT_MODEL only"
    config, _ = resolve_config(AgentFlags(model="hosted_vllm/x", api_base="https://vllm.internal/v1"))
    assert config.model_settings.extra == {"api_base": "https://vllm.internal/v1"}

    monkeypatch.setenv("REACT_MODEL", "scripted")
    config, demo = resolve_config(AgentFlags())
    assert demo and config.model == "scripted" and config.script

    for flags in (AgentFlags(api_base="127.0.0.1:8000"), AgentFlags(api_base=" ")):
        with pytest.raises(CliError, match="--api-base must be an http"):
            resolve_config(flags)
    monkeypatch.setenv("REACT_API_BASE", "ftp://x")
    with pytest.raises(CliError, match="REACT_API_BASE must be an http"):
        resolve_config(AgentFlags())


def test_the_bundled_model_reads_a_tool_s_value_and_is_asked_for_a_sentence() -> None:
    # The 135M model repeats the last line it sees: the envelope came back as the answer
    # (`The answer is: {"ok": true, "result": 391}`). It now reads the value and the question.
    call = {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true, "result": 391}'},
    ]
    plain = plain_messages(messages)
    assert [m["role"] for m in plain] == ["system", "user", "user"]
    assert plain[-1]["content"] == (
        'Tool result: 391. Now answer my question "What is 17 * 23?" in one full sentence.'
    )
    assert readable_result('{"ok": true, "result": "sunny"}') == "sunny"
    assert readable_result('{"ok": true, "result": {"a": 1}, "note": "approved"}') == '{"a": 1} (approved)'
    failed = '{"ok": false, "error": {"code": "tool_failed", "message": "division by zero"}}'
    assert readable_result(failed) == "error: division by zero"
    assert readable_result("plain text") == "plain text" and readable_result("[1, 2]") == "[1, 2]"
