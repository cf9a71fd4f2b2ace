"""The CLI without a server: option resolution; bad arguments and input over a limit: one line, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from typer.testing import CliRunner

from cli.demo import DEMO_TOOL
from cli.errors import CliError, describe, error_line
from cli.inputs import AgentFlags, explicit_settings, resolve_config
from cli.session_commands import app
from contracts import SCRIPTED_MODEL, ScriptTurn
from contracts.limits import (
    MAX_ID_CHARS,
    MAX_MODEL_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    MAX_SOURCE_CHARS,
)

UNREACHABLE = ["--address", "127.0.0.1:1"]


def test_coded_update_rejection_reads_like_an_ack() -> None:
    busy = WorkflowUpdateFailedError(ApplicationError("the session is running request r1", type="busy"))
    assert describe(busy, "addr", "s") == "rejected: busy (the session is running request r1)"
    assert error_line(busy, "addr", "s") == "rejected: busy (the session is running request r1)"
    other = WorkflowUpdateFailedError(RuntimeError("oops"))
    assert error_line(other, "addr", "s") == "error: update failed: oops"


def test_config_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REACT_MODEL", SCRIPTED_MODEL)  # the scripted demo (no model: the bundled local one)
    config, demo = resolve_config(AgentFlags(tools=("search",)))
    assert demo and config.model == SCRIPTED_MODEL and config.tools == [DEMO_TOOL, "search"] and config.script
    assert explicit_settings(AgentFlags()) == {}

    monkeypatch.setenv("REACT_MODEL", "openai/gpt-4o-mini")
    config, demo = resolve_config(AgentFlags(system_prompt="be terse", max_iterations=3))
    assert not demo and config.model == "openai/gpt-4o-mini"
    assert (config.system_prompt, config.max_iterations, config.script) == ("be terse", 3, [])

    script = tmp_path / "script.json"
    script.write_text('[{"content": "hi"}]', encoding="utf-8")
    overrides = explicit_settings(AgentFlags(script=script, tools=("a", "a")))
    turns = [ScriptTurn(content="hi").model_dump(mode="json")]
    assert overrides == {"model": SCRIPTED_MODEL, "script": turns, "tools": ["a"]}
    with pytest.raises(CliError, match="drop --model"):
        explicit_settings(AgentFlags(model="openai/gpt-4o", script=script))


@pytest.mark.parametrize(
    "args",
    [
        ["status", "some-id"],
        ["history", "some-id", "--requests"],
        ["export", "--conversation", "c1"],
        ["await", "some-id", "req-1"],
        ["ask", "some-id", "hello"],
        ["chat", "some-id"],
    ],
)
def test_unreachable_server_is_one_line_and_exit_1(args: list[str]) -> None:
    result = CliRunner().invoke(app, [*args, *UNREACHABLE], input="")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot reach Temporal at 127.0.0.1:1" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status"], "error: a SESSION_ID is required"),
        (["status", "--conversation", "c", "x"], "error: unexpected argument 'x'"),
        (["ask", "--session", "s", "q", "extra"], "error: unexpected argument 'extra'"),
        (["history", "--session", "s", "--conversation", "c"], "error: use --session or --conversation"),
        (["chat", "s", "--session", "t"], "error: unexpected argument 's'"),
        (["await", "s"], "error: a REQUEST_ID is required"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_1(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, [*args, *UNREACHABLE])
    assert result.exit_code == 1
    assert result.output.strip().startswith(message) and len(result.output.strip().splitlines()) == 1


def test_bad_script_file_is_reported_before_connecting(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"tool_calls": 3}]', encoding="utf-8")
    result = CliRunner().invoke(app, ["ask", "s", "q", "--script", str(script), *UNREACHABLE])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: invalid script in")


@pytest.mark.parametrize(
    ("args", "code", "limit"),
    [
        (["steer", "some-id", "x" * (MAX_QUERY_CHARS + 1)], "payload_too_large", MAX_QUERY_CHARS),
        (
            ["inject", "some-id", "hi", "--source", "s" * (MAX_SOURCE_CHARS + 1)],
            "payload_too_large",
            MAX_SOURCE_CHARS,
        ),
        (
            ["cancel", "some-id", "--reason", "r" * (MAX_REASON_CHARS + 1)],
            "payload_too_large",
            MAX_REASON_CHARS,
        ),
        (
            ["compact", "some-id", "--model", "m" * (MAX_MODEL_CHARS + 1)],
            "payload_too_large",
            MAX_MODEL_CHARS,
        ),
        (["context", "switch", "some-id", "l" * (MAX_ID_CHARS + 1)], "payload_too_large", MAX_ID_CHARS),
        (["ask", "some-id", "q" * (MAX_QUERY_CHARS + 1)], "payload_too_large", MAX_QUERY_CHARS),
        (["steer", "some-id", "  "], "blank_content", None),
        (["context", "switch", "some-id", " "], "invalid_op", None),
    ],
)
def test_input_over_a_limit_is_rejected_before_connecting(
    args: list[str], code: str, limit: int | None
) -> None:
    result = CliRunner().invoke(app, [*args, *UNREACHABLE])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"rejected: {code} (") and "cannot reach" not in line
    assert limit is None or str(limit) in line


def test_a_run_over_a_limit_is_rejected_before_connecting(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"content": "hi"}]', encoding="utf-8")
    query = "q" * (MAX_QUERY_CHARS + 1)
    result = CliRunner().invoke(app, ["run", query, "--script", str(script), *UNREACHABLE])
    assert result.exit_code == 1
    assert result.output.strip().startswith("rejected: payload_too_large (ReActRun input: query:")
