"""Pure rendering of session data: request records, the status table, the thread as lines.

Like `cli.render`, nothing here talks to Temporal or prints, so every format is
unit-testable with real contract models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rich.table import Table

from cli.render import add_row, new_table, outcome_lines, preview
from contracts.session import AskAccepted, RequestRecord, RequestResult, SessionStatus
from conversation import DEFAULT_CONTEXT_REF, ContextOpEntry, Entry, MessageEntry

CONTENT_CHARS = 120


def record_lines(record: RequestRecord, verbose: bool = False) -> list[str]:
    """A request's outcome: status, answer (a `RequestResult`'s) or error, usage.

    `verbose` adds the query's preview, the run's workflow id and the timing.
    """
    answer = record.result if isinstance(record, RequestResult) else None
    lines = outcome_lines(f"request {record.request_id}", record.outcome, answer)
    if verbose:
        lines.insert(1, f"query: {preview(record.query_preview, CONTENT_CHARS)}")
        lines.append(f"run workflow id: {record.run_workflow_id}")
        lines.append(f"started: {record.started_at:%Y-%m-%d %H:%M:%S}{_duration(record)}")
    return lines


def accepted_line(accepted: AskAccepted) -> str | None:
    """What a busy session did with an ask (None when the ask simply started a request)."""
    match accepted.disposition:
        case "started":
            return None
        case "enqueued":
            return f"enqueued: runs after the active request (position {accepted.position})"
        case "steered":
            return f"steered the running request {accepted.request_id} (input {accepted.input_id})"
        case "interrupted":
            return f"interrupted request {accepted.replaced_request_id}: this one runs next"
        case "rolled_back":
            return f"rolled back request {accepted.replaced_request_id}: this one runs next"


def _duration(record: RequestRecord) -> str:
    """`, finished after N.Ns` once the request is over."""
    if record.finished_at is None:
        return ""
    return f", finished after {(record.finished_at - record.started_at).total_seconds():.1f}s"


def status_table(status: SessionStatus) -> Table:
    """The `status` query as a field/value table."""
    active = "-"
    if status.active_request_id:
        active = f"{status.active_request_id} (run {status.active_run_workflow_id or '?'})"
    rows = [
        ("agent", status.agent_id),
        ("state", status.state),
        ("active request", active),
        ("model", status.config.model),
        ("tools", ", ".join(status.config.tools) or "(none)"),
        ("thread length", _thread_length(status)),
        ("active lane", status.active_context_ref),
        ("pending context op", status.pending_context_op_id or "-"),
        ("requests kept", str(status.requests_kept)),
        ("requests waiting", str(status.waiting_requests)),
    ]
    if status.forked_from is not None:
        rows.append(("forked from", f"{status.forked_from.parent_id} at seq {status.forked_from.seq}"))
    table = new_table("session status", "field", "value", header=False)
    for key, value in rows:
        add_row(table, key, value)
    return table


def agent_state_lines(state: Mapping[str, object]) -> list[str]:
    """The agent state tools change through effects, as indented JSON (one line when empty)."""
    if not state:
        return ["agent state: {}"]
    return ["agent state:", *json.dumps(state, indent=2, ensure_ascii=False).splitlines()]


def _thread_length(status: SessionStatus) -> str:
    """The thread's length, and how much of it is archived in the payload store."""
    if not status.archived_entries:
        return str(status.thread_length)
    return f"{status.thread_length} ({status.archived_entries} archived)"


def _message_line(entry: MessageEntry) -> str:
    """`#seq role content`, tool calls as `name(args)`, tool results as `name -> result`."""
    payload = entry.payload
    if payload.role == "tool":
        text = f"{payload.name or payload.tool_call_id or '?'} -> {preview(payload.content, CONTENT_CHARS)}"
    else:
        text = preview(payload.content, CONTENT_CHARS) if payload.content else ""
    if payload.tool_calls:
        calls = ", ".join(f"{c.name}({preview(c.arguments, 40)})" for c in payload.tool_calls)
        text = f"{text} [calls {calls}]".strip()
    lane = f" [lane {payload.context_ref}]" if payload.context_ref != DEFAULT_CONTEXT_REF else ""
    return f"#{entry.seq:<4} {payload.role:<9} {text}{lane}".rstrip()


def _op_line(entry: ContextOpEntry) -> str:
    """`#seq context replace lane=.. op=.. (reason), N message(s)`."""
    op = entry.payload.operation
    size = f", {len(op.result_context.messages)} message(s)" if op.result_context else ""
    where = f"lane={entry.payload.context_ref} op={entry.payload.op_id}"
    return f"#{entry.seq:<4} {'context':<9} {op.type} {where} ({op.reason}){size}"


def history_lines(entries: Sequence[Entry]) -> list[str]:
    """The thread as readable lines, with a header line where a new request's messages begin."""
    lines: list[str] = []
    request: str | None = None
    for entry in sorted(entries, key=lambda e: e.seq):
        if isinstance(entry, ContextOpEntry):
            lines.append(_op_line(entry))
            continue
        if entry.payload.request_id != request:
            request = entry.payload.request_id
            lines.append(f"-- request {request}")
        lines.append(_message_line(entry))
    return lines or ["(the thread is empty)"]


def requests_table(records: Sequence[RequestRecord]) -> Table:
    """The requests the session keeps, one row each (the answer's text is in the thread, at its seq)."""
    table = new_table("requests", "request", "status", "started", "query", "answer / error", "tokens")
    for record in records:
        outcome = record.outcome
        if outcome.error is not None:
            result = f"{outcome.error.type}: {preview(outcome.error.message, 60)}"
        else:
            result = f"thread#{outcome.answer_seq}" if outcome.answer_seq is not None else "-"
        status = outcome.status + (f" ({outcome.termination_reason})" if outcome.termination_reason else "")
        add_row(
            table,
            record.request_id,
            status,
            f"{record.started_at:%H:%M:%S}",
            preview(record.query_preview, 60),
            result,
            str(outcome.usage.total_tokens),
        )
    return table
