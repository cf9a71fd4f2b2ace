"""The CLI's session rendering, chat line parsing, option resolution and server-less error paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from typer.testing import CliRunner

from cli import app, render_session
from cli.chat import ChatCommand, help_lines, parse_line
from cli.demo import DEMO_TOOL
from cli.errors import CliError, describe, error_line
from cli.inputs import AgentFlags, explicit_settings, resolve_config
from contracts import SCRIPTED_MODEL, AgentConfig, Outcome, RunError, ScriptTurn, Usage
from contracts.limits import (
    MAX_ID_CHARS,
    MAX_MODEL_CHARS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    MAX_SOURCE_CHARS,
)
from contracts.session import RequestRecord, RequestResult, SessionStatus
from conversation import (
    Context,
    ContextOpEntry,
    ContextOperation,
    ContextOpPayload,
    Entry,
    Message,
    MessageEntry,
    MessagePayload,
    ToolCall,
)

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
UNREACHABLE = ["--address", "127.0.0.1:1"]


def text_of(renderable: RenderableType) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


def record(answer: str | None = None, **outcome: Any) -> RequestResult:
    """A finished request's record with its answer (what `await_result` returns)."""
    return RequestResult(
        request_id="req-1",
        query_preview="What is 17 * 23?",
        run_workflow_id="agent-c1-run-1",
        started_at=AT,
        outcome=Outcome.model_validate({"status": "completed", **outcome}),
        result=answer,
    )


def message(seq: int, role: str, content: str = "", request: str = "req-1", **fields: object) -> MessageEntry:
    payload = MessagePayload.model_validate(
        {"role": role, "content": content, "request_id": request, "run_id": "run"} | fields
    )
    return MessageEntry(seq=seq, at=AT, payload=payload)


def test_record_lines_show_outcome_answer_and_usage() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, llm_calls=2)
    done = record("391", termination_reason="final_answer", usage=usage, iterations=2)
    lines = render_session.record_lines(done)
    assert lines[0] == "request req-1 completed (final_answer)"
    assert lines[1] == "answer: 391"
    assert "15 tokens" in lines[2] and "2 iteration(s)" in lines[2]

    failed = record(
        status="failed", error=RunError(type="LLMError", message="boom"), termination_reason="error"
    )
    assert "error: LLMError: boom" in render_session.record_lines(failed)
    cancelled = record("stopped by the user", status="cancelled")
    assert "note: stopped by the user" in render_session.record_lines(cancelled)
    # A record without the answer's text (the `requests` query) shows the outcome only.
    bare = RequestRecord.model_validate(done.model_dump(exclude={"result"}))
    assert not any(line.startswith("answer") for line in render_session.record_lines(bare))


def test_verbose_record_lines_add_query_run_and_timing() -> None:
    finished = record("391").model_copy(update={"finished_at": AT + timedelta(seconds=2.5)})
    text = "\n".join(render_session.record_lines(finished, verbose=True))
    assert "query: What is 17 * 23?" in text
    assert "run workflow id: agent-c1-run-1" in text
    assert "finished after 2.5s" in text
    running = record(status="running")
    assert "finished" not in "\n".join(render_session.record_lines(running, verbose=True))


def test_status_table_shows_state_request_model_tools_and_lane() -> None:
    status = SessionStatus(
        agent_id="support",
        state="running",
        active_request_id="req-7",
        active_run_workflow_id="agent-c1-run-7",
        config=AgentConfig(model="openai/gpt-4o-mini", tools=["calculator", "search"]),
        thread_length=12,
        archived_entries=8,
        active_context_ref="drafts",
        pending_context_op_id="op-9",
        requests_kept=7,
    )
    text = text_of(render_session.status_table(status))
    for expected in ("support", "running", "req-7 (run agent-c1-run-7)", "gpt-4o-mini", "calculator, search"):
        assert expected in text
    assert "12 (8 archived)" in text and "drafts" in text and "op-9" in text

    idle = SessionStatus(agent_id="a", state="idle", config=AgentConfig(model="m"), thread_length=0)
    text = text_of(render_session.status_table(idle))
    assert "idle" in text and "(none)" in text and "default" in text


def test_history_lines_group_by_request_and_show_calls_results_and_ops() -> None:
    replaced = Context(messages=[Message(role="user", content="summary")])
    op = ContextOpEntry(
        seq=4,
        at=AT,
        payload=ContextOpPayload(
            op_id="op-1",
            context_ref="default",
            operation=ContextOperation(type="replace", reason="compaction", result_context=replaced),
        ),
    )
    entries: list[Entry] = [
        message(1, "assistant", tool_calls=[ToolCall(id="c1", name="calculator", arguments='{"x":"17*23"}')]),
        message(0, "user", "What is 17 * 23?"),
        message(2, "tool", "391", tool_call_id="c1", name="calculator"),
        message(3, "assistant", "17 * 23 = 391."),
        op,
        message(5, "user", "and " + "x" * 300, request="req-2", context_ref="drafts"),
    ]
    lines = render_session.history_lines(entries)
    assert lines[0] == "-- request req-1"
    assert lines[1].startswith("#0") and "user" in lines[1] and "What is 17 * 23?" in lines[1]
    assert 'calls calculator({"x":"17*23"})' in lines[2]
    assert "calculator -> 391" in lines[3]
    assert "context" in lines[5] and "replace lane=default op=op-1 (compaction), 1 message(s)" in lines[5]
    assert lines[6] == "-- request req-2"
    assert lines[7].endswith("[lane drafts]") and len(lines[7]) < 200
    assert render_session.history_lines([]) == ["(the thread is empty)"]


def test_requests_table_lists_each_request() -> None:
    answered = record("391", answer_seq=3, usage=Usage(total_tokens=77))
    failed = record(status="failed", error=RunError(type="E", message="bad")).model_copy(
        update={"request_id": "req-2"}
    )
    text = text_of(render_session.requests_table([answered, failed]))
    assert "req-1" in text and "thread#3" in text and "77" in text and "17 * 23" in text
    assert "req-2" in text and "E: bad" in text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("hello there", ChatCommand("ask", "hello there")),
        ("  ", None),
        ("/steer be brief", ChatCommand("steer", "be brief")),
        ("/inject also: 42", ChatCommand("inject", "also: 42")),
        ("/cancel", ChatCommand("cancel")),
        ("/context replace start over", ChatCommand("context replace", "start over")),
        ("/context switch drafts", ChatCommand("context switch", "drafts")),
        ("/history 3", ChatCommand("history", "3")),
        ("/EXPORT", ChatCommand("export")),
        ("/exit", ChatCommand("quit")),
    ],
)
def test_parse_line(line: str, expected: ChatCommand | None) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/steer", "usage: /steer TEXT"),
        ("/context", "usage: /context replace TEXT | /context switch LANE"),
        ("/context drop x", "usage: /context replace TEXT"),
        ("/history soon", "usage: /history [SINCE]"),
        ("/frobnicate", "unknown command /frobnicate"),
    ],
)
def test_parse_line_errors(line: str, message: str) -> None:
    with pytest.raises(CliError, match=message.replace("|", r"\|").replace("[", r"\[")):
        parse_line(line)


def test_help_lists_every_command() -> None:
    text = "\n".join(help_lines())
    for command in ("/steer", "/inject", "/cancel", "/context replace", "/export", "/history", "/quit"):
        assert command in text


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
