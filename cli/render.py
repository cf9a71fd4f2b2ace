"""Pure rendering of run data for the terminal: trace lines, acks, results and tables.

Nothing here talks to Temporal or prints, so every format is unit-testable with
real contract models. Trace events are rendered in `cli.render_trace` and the text
building blocks live in `cli.render_text`; both are importable from here as well.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

from rich.table import Table

from cli.render_text import PREVIEW_CHARS, add_row, new_table, preview
from cli.render_trace import (
    LINE_CHARS,
    TRUNCATED_NOTICE,
    event_details,
    event_line,
    event_style,
    new_events,
    trace_table,
)
from contracts import Ack, Outcome, RunResult, RunState, Usage
from conversation import Context, ContextOpEntry, Entry

__all__ = [
    "LINE_CHARS",
    "PREVIEW_CHARS",
    "TRUNCATED_NOTICE",
    "ack_line",
    "add_row",
    "approvals_table",
    "context_table",
    "event_details",
    "event_line",
    "event_style",
    "new_events",
    "new_table",
    "outcome_lines",
    "preview",
    "result_lines",
    "state_table",
    "thread_table",
    "tool_calls_table",
    "trace_table",
    "ui_link",
    "usage_line",
]


def ui_link(base_url: str, namespace: str, workflow_id: str) -> str:
    """The Web UI page of a workflow, so the user can open its history in one click."""
    ns, wid = quote(namespace, safe=""), quote(workflow_id, safe="")
    return f"{base_url.rstrip('/')}/namespaces/{ns}/workflows/{wid}"


def usage_line(usage: Usage, iterations: int | None = None) -> str:
    """Token usage in one line; iterations when known."""
    line = (
        f"usage: {usage.total_tokens} tokens ({usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion) in {usage.llm_calls} LLM call(s)"
    )
    return line if iterations is None else f"{line}, {iterations} iteration(s)"


def outcome_lines(head: str, outcome: Outcome, answer: str | None) -> list[str]:
    """How a run or a request ended: `<head> <status> (<reason>)`, the answer or a note, the error, usage."""
    reason = f" ({outcome.termination_reason})" if outcome.termination_reason else ""
    lines = [f"{head} {outcome.status}{reason}"]
    if answer is not None:
        lines.append(f"answer: {answer}" if outcome.status == "completed" else f"note: {answer}")
    if outcome.error is not None:
        lines.append(f"error: {outcome.error.type}: {outcome.error.message}")
    lines.append(usage_line(outcome.usage, outcome.iterations))
    return lines


def result_lines(result: RunResult) -> list[str]:
    """The end of a followed run: outcome, final answer or reason, usage."""
    return outcome_lines("run", result.outcome, result.result)


def ack_line(ack: Ack) -> str:
    """What an acknowledging Update answered, as the user should read it."""
    note = f" ({ack.message})" if ack.message else ""
    match ack.status:
        case "queued":
            mode = " (interrupt)" if ack.mode == "interrupt" else ""
            return f"queued {ack.input_id or ''}".rstrip() + mode + note
        case "rejected":
            return f"rejected: {ack.reason or 'no reason given'}{note}"
        case "deferred" | "applied" | "duplicate":
            return f"{ack.status} {ack.op_id or ''}".rstrip() + note
        case "accepted":
            return f"accepted {ack.call_id or ''}".rstrip() + note


def state_table(state: RunState) -> Table:
    """The `state` query as a field/value table."""
    op, outcome = state.pending_context_op, state.outcome
    rows = [
        ("status", outcome.status),
        ("request_id", state.request_id),
        ("run_id", state.run_id),
        ("iteration", str(state.iteration)),
        ("usage", usage_line(outcome.usage).removeprefix("usage: ")),
        ("queued inputs", str(state.queued_inputs)),
        ("active lane", state.active_context_ref),
        ("pending context op", f"{op.operation.type} {op.op_id} (lane {op.context_ref})" if op else "-"),
        ("termination", outcome.termination_reason or "-"),
        ("answer", f"thread#{outcome.answer_seq}" if outcome.answer_seq is not None else "-"),
        ("error", f"{outcome.error.type}: {outcome.error.message}" if outcome.error else "-"),
        ("thread length", str(state.thread_length)),
    ]
    if state.agent_state:
        rows.append(("agent state", preview(json.dumps(state.agent_state, ensure_ascii=False), 200)))
    table = new_table("run state", "field", "value", header=False)
    for key, value in rows:
        add_row(table, key, value)
    return table


def tool_calls_table(state: RunState) -> Table:
    """The current round's tool calls."""
    table = new_table("tool calls (current round)", "id", "name", "status", "attempts", "started", "duration")
    for call in state.pending_tool_calls:
        duration = f"{call.duration_ms}ms" if call.duration_ms is not None else "-"
        started = f"{call.started_at:%H:%M:%S}"
        add_row(table, call.id, call.name, call.status, str(call.attempts), started, duration)
    return table


def approvals_table(state: RunState) -> Table:
    """The tool calls awaiting a decision, with how to give it."""
    table = new_table("awaiting approval", "call id", "tool", "arguments", "deadline", "on timeout")
    table.caption = "decide with `python client.py approve WORKFLOW_ID CALL_ID [--deny --reason R]`"
    for pending in state.pending_approvals:
        arguments = preview(pending.arguments, 80) + (" (cut)" if pending.arguments_truncated else "")
        deadline = f"{pending.deadline:%Y-%m-%d %H:%M:%S}"
        add_row(table, pending.call_id, pending.name, arguments, deadline, pending.on_timeout)
    return table


def thread_table(entries: Sequence[Entry]) -> Table:
    """The thread log: one row per entry."""
    table = new_table("thread", "seq", "kind", "lane", "role/op", "content")
    for entry in entries:
        if isinstance(entry, ContextOpEntry):
            op = entry.payload.operation
            size = len(op.result_context.messages) if op.result_context else 0
            what = f"op {entry.payload.op_id} ({op.reason}), {size} message(s)"
            add_row(table, str(entry.seq), "context op", entry.payload.context_ref, op.type, what)
            continue
        payload = entry.payload
        text = preview(payload.content, 120)
        if payload.tool_calls:
            calls = ", ".join(f"{c.name}({preview(c.arguments, 40)})" for c in payload.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        add_row(table, str(entry.seq), "message", payload.context_ref, payload.role, text)
    return table


def context_table(context: Context) -> Table:
    """The materialized context: system prompt as the title, then the messages."""
    table = new_table("context", "#", "role", "content")
    add_row(table, "-", "system", preview(context.system_prompt, 160) if context.system_prompt else "(none)")
    if context.summary:
        add_row(table, "-", "summary", preview(context.summary, 160))
    for index, message in enumerate(context.messages):
        text = preview(message.content, 160)
        if message.tool_calls:
            text = f"{text} [calls {', '.join(c.name for c in message.tool_calls)}]".strip()
        add_row(table, str(index), message.role, text)
    return table
