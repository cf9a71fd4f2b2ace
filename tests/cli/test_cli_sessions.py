"""The CLI's session rendering and the chat's line parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console, RenderableType

from cli import render_session
from cli.chat import ChatCommand, help_lines, parse_line
from cli.errors import CliError
from contracts import AgentConfig, Outcome, RunError, Usage
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
