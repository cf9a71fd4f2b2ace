"""The CLI's pure rendering (trace lines, acks, results, tables) and a server-less error path."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import JsonValue
from rich.console import Console, RenderableType
from typer.testing import CliRunner

from cli import render
from cli.demo import DEMO_TOOL, demo_script
from cli.session_commands import app
from contracts import (
    MAX_ITERATIONS_RESULT,
    Ack,
    Outcome,
    RunError,
    RunResult,
    RunState,
    ToolCallStatus,
    Trace,
    TraceEvent,
    TraceKind,
    Usage,
)
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


def event(kind: TraceKind, /, trace_seq: int = 1, **data: JsonValue) -> TraceEvent:
    """A trace event of iteration 1; `kind` is positional so that `kind=` can be a data key."""
    return TraceEvent(seq=trace_seq, at=AT, kind=kind, iteration=1, request_id="req", run_id="run", data=data)


def text_of(renderable: RenderableType) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(renderable)
    return console.export_text()


USAGE: JsonValue = {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135}
CASES: list[tuple[TraceEvent, list[str]]] = [
    (event("request_started", query="What is 17 * 23?", model="scripted"), ["17 * 23?", "model=scripted"]),
    (event("llm_started", model="openai/gpt-4o-mini", messages=3), ["gpt-4o-mini", "messages=3"]),
    (
        event("llm_completed", finish_reason="tool_calls", usage=USAGE, tool_calls=[{"name": "calculator"}]),
        ["finish=tool_calls", "tokens=120+15", "calls=calculator"],
    ),
    (
        event("tool_started", name="calculator", arguments='{"x": "17 * 23"}'),
        ['calculator({"x": "17 * 23"})'],
    ),
    (event("tool_completed", name="calc", ok=True, result=391, duration_ms=4), ["ok", "-> 391", "4ms"]),
    (
        event("tool_completed", name="calc", ok=False, error={"type": "ToolTimeout", "message": "slow"}),
        ["calc error", "ToolTimeout: slow"],
    ),
    (event("llm_completed", finish_reason="stop", total_tokens=42, tool_calls=[]), ["tokens=42"]),
    (
        event("tool_completed", name="calc", ok=True, outcome='{"ok": true, "result": 391}'),
        ["calc ok", "-> 391"],
    ),
    (
        event("tool_completed", name="calc", ok=False, outcome='{"ok": false, "error": {"type": "E", "me'),
        ["calc error", '-> {"ok": false'],
    ),
    (
        event("input_injected", kind="steer", content="be brief", seq=4),
        ["steer", "content=be brief", "thread#4"],
    ),
    (
        event("input_rejected", kind="inject", reason="request_mismatch", message="run is r1"),
        ["rejected: request_mismatch", "(run is r1)"],
    ),
    (event("context_op_deferred", type="replace", context_ref="default"), ["replace", "lane=default"]),
    (event("context_op_applied", type="switch", context_ref="b"), ["switch", "lane=b"]),
    (event("context_op_rejected", type="switch", reason="needs a lane"), ["reason=needs a lane"]),
    (
        event("request_completed", termination_reason="final_answer", result="391"),
        ["reason=final_answer", "answer=391"],
    ),
    (event("request_failed", error={"type": "AuthError", "message": "bad key"}), ["AuthError: bad key"]),
    (event("request_cancelled", reason="user stop"), ["reason=user stop"]),
]


@pytest.mark.parametrize(("trace_event", "expected"), CASES, ids=[case[0].kind for case in CASES])
def test_event_line_shows_the_key_data_of_each_kind(trace_event: TraceEvent, expected: list[str]) -> None:
    line = render.event_line(trace_event)
    assert "\n" not in line
    assert trace_event.kind in line
    assert "iter 1" in line
    for fragment in expected:
        assert fragment in line


def test_event_line_shows_ids_and_unknown_keys_and_stays_one_short_line() -> None:
    ev = event("tool_completed", name="t", ok=True, result="x" * 5000, surprise="kept")
    ev = ev.model_copy(update={"call_id": "call-9"})
    line = render.event_line(ev)
    assert "call=call-9" in line
    assert "surprise=kept" in line
    assert "absent" not in render.event_line(event("context_op_deferred", type="replace", absent=None))
    assert "dropped" not in render.event_line(event("request_completed", dropped_inputs=0))
    assert "dropped 2 queued input(s)" in render.event_line(event("request_cancelled", dropped_inputs=2))
    assert len(line) <= render.LINE_CHARS
    assert "\n" not in render.event_line(event("input_injected", content="two\nlines"))


def test_every_trace_kind_renders_without_data() -> None:
    for kind in TraceKind.__args__:
        assert kind in render.event_line(event(kind))


def test_new_events_returns_only_unprinted_events_in_order() -> None:
    trace = Trace(
        events=[
            event("llm_started", trace_seq=3),
            event("request_started", trace_seq=1),
            event("llm_started", trace_seq=2),
        ]
    )
    assert [e.seq for e in render.new_events(trace, last_seq=1)] == [2, 3]
    assert render.new_events(trace, last_seq=3) == []


def test_truncated_trace_and_rejection_counts_are_announced_in_the_table() -> None:
    assert "truncated" in render.TRUNCATED_NOTICE
    truncated = Trace(events=[event("llm_started")], truncated=True, dropped=7)
    assert "(truncated: 7 middle event(s) dropped)" in text_of(render.trace_table(truncated))
    assert "truncated" not in text_of(render.trace_table(Trace(events=[event("llm_started")])))
    flooded = Trace(events=[event("input_rejected")], rejections={"input_rejected": 25})
    assert "input_rejected x25" in text_of(render.trace_table(flooded))


def test_ack_lines() -> None:
    assert render.ack_line(Ack(status="queued", input_id="in-1")) == "queued in-1"
    assert render.ack_line(Ack(status="rejected", reason="sealed")) == "rejected: sealed"
    rejected = Ack(status="rejected", reason="too_long", message="at most 10 chars")
    assert render.ack_line(rejected) == "rejected: too_long (at most 10 chars)"
    assert render.ack_line(Ack(status="applied", op_id="op-1")) == "applied op-1"
    assert render.ack_line(Ack(status="accepted")) == "accepted"
    assert render.ack_line(Ack(status="deferred", op_id="op-2")).startswith("deferred op-2")


def test_result_lines_show_answer_or_error_and_usage() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, llm_calls=2)
    asked = MessageEntry(at=AT, payload=MessagePayload(role="user", content="q", request_id="r", run_id="x"))
    said = MessagePayload(role="assistant", content="391", request_id="r", run_id="x")
    outcome = Outcome(
        status="completed", termination_reason="final_answer", usage=usage, iterations=2, answer_seq=1
    )
    done = RunResult(
        request_id="r", run_id="x", outcome=outcome, entries=[asked, MessageEntry(seq=1, at=AT, payload=said)]
    )
    lines = render.result_lines(done)
    assert lines[0] == "run completed (final_answer)"
    assert "answer: 391" in lines
    assert "15 tokens" in lines[-1] and "2 LLM call(s)" in lines[-1] and "2 iteration(s)" in lines[-1]
    failed = RunResult(
        request_id="r",
        run_id="x",
        outcome=Outcome(status="failed", error=RunError(type="Auth", message="no key")),
    )
    assert "error: Auth: no key" in render.result_lines(failed)
    assert not any(line.startswith("answer") for line in render.result_lines(failed))
    limited = RunResult(
        request_id="r", run_id="x", outcome=Outcome(status="completed", termination_reason="max_iterations")
    )
    assert f"answer: {MAX_ITERATIONS_RESULT}" in render.result_lines(limited)


def test_state_table_contains_status_and_tool_calls() -> None:
    state = RunState(
        request_id="req-7",
        run_id="run",
        outcome=Outcome(status="running", answer_seq=None, error=RunError(type="E", message="boom")),
        iteration=2,
        queued_inputs=1,
        thread_length=9,
        pending_tool_calls=[ToolCallStatus(id="c1", name="calculator", started_at=AT, attempts=2)],
    )
    text = text_of(render.state_table(state))
    assert "status" in text and "running" in text and "req-7" in text and "E: boom" in text
    assert "thread length" in text and "9" in text
    done = state.model_copy(update={"outcome": Outcome(status="completed", answer_seq=4)})
    assert "thread#4" in text_of(render.state_table(done))
    calls = text_of(render.tool_calls_table(state))
    assert "calculator" in calls and "c1" in calls and "03:04:05" in calls


def test_thread_and_context_tables() -> None:
    said = MessagePayload(role="user", content="hello", request_id="r", run_id="x")
    call = ToolCall(id="c1", name="calculator", arguments='{"expression": "[b]2[/b]"}')
    asked = MessagePayload(role="assistant", tool_calls=[call], request_id="r", run_id="x")
    replace = ContextOperation(type="replace", result_context=Context(messages=[Message(role="user")]))
    op = ContextOpPayload(op_id="op-1", context_ref="b", operation=replace)
    entries: list[Entry] = [
        MessageEntry(at=AT, payload=said),
        MessageEntry(at=AT, seq=1, payload=asked),
        ContextOpEntry(at=AT, seq=2, payload=op),
    ]
    thread = text_of(render.thread_table(entries))
    assert "hello" in thread and "op-1" in thread and "replace" in thread
    assert '[calls calculator({"expression": "[b]2[/b]"})]' in thread  # content is never read as markup
    context = text_of(
        render.context_table(
            Context(system_prompt="Be terse", summary="Earlier: 17 * 23", messages=[Message(role="user")])
        )
    )
    assert "Be terse" in context and "system" in context and "user" in context
    assert "summary" in context and "Earlier: 17 * 23" in context


def test_ui_link_and_demo_script() -> None:
    assert render.ui_link("http://localhost:8233/", "default", "react-1") == (
        "http://localhost:8233/namespaces/default/workflows/react-1"
    )
    first, last = demo_script()
    assert first.tool_calls[0].name == DEMO_TOOL and first.tool_calls[0].arguments == {
        "expression": "17 * 23"
    }
    assert last.content is not None and "391" in last.content


def test_unreachable_server_is_one_line_and_exit_1() -> None:
    result = CliRunner().invoke(app, ["show", "some-id", "--address", "127.0.0.1:1"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot reach Temporal at 127.0.0.1:1" in lines[0]
    assert "Traceback" not in result.output


def test_bad_script_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"content": 3}]')
    result = CliRunner().invoke(app, ["run", "q", "--script", str(script), "--address", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: invalid script in")
