"""Pure rendering of run data for the terminal: trace lines, acks, results and tables.

Nothing here talks to Temporal or prints, so every format is unit-testable with
real contract models. The workflow decides what goes in a trace event's `data`;
the renderer shows the keys it knows first and any other keys as short
`key=value` previews, so a new key still shows up instead of vanishing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

from pydantic import JsonValue
from rich.table import Table
from rich.text import Text

from contracts import Ack, RunResult, RunState, Trace, TraceEvent, TraceKind, Usage
from conversation import Context, ContextOpEntry, Entry

PREVIEW_CHARS = 80
LINE_CHARS = 400
TRUNCATED_NOTICE = "(the trace is truncated: the run recorded more events than the trace query keeps)"

_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
# Keys each kind's summary already shows; other keys are appended as previews.
_SHOWN: dict[TraceKind, tuple[str, ...]] = {
    "request_started": ("query", "model", "tools"),
    "llm_started": ("model", "messages", "attempt"),
    "llm_completed": ("finish_reason", "usage", *_TOKEN_KEYS, "tool_calls", "content"),
    "tool_started": ("name", "tool", "arguments"),
    "tool_completed": ("ok", "outcome", "result", "error", "attempts"),
    "input_injected": ("kind", "source", "content", "seq"),
    "input_rejected": ("kind", "reason", "message", "content"),
    "context_op_deferred": ("type", "context_ref", "reason"),
    "context_op_applied": ("type", "context_ref", "reason", "seq"),
    "context_op_rejected": ("type", "context_ref", "reason"),
    "request_completed": ("termination_reason", "result", "iterations"),
    "request_failed": ("error", "message"),
    "request_cancelled": ("reason",),
}

_STYLES: dict[str, str] = {
    "llm_completed": "cyan",
    "input_injected": "magenta",
    **dict.fromkeys(("tool_started", "tool_completed"), "yellow"),
    **dict.fromkeys(("context_op_applied", "context_op_deferred"), "blue"),
    **dict.fromkeys(("input_rejected", "context_op_rejected"), "red"),
    **dict.fromkeys(("request_failed", "request_cancelled"), "bold red"),
    "request_completed": "bold green",
}


def preview(value: JsonValue, limit: int = PREVIEW_CHARS) -> str:
    """One-line, length-capped text of a value, so a huge tool result cannot flood the terminal."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kv(data: dict[str, JsonValue], key: str, label: str | None = None) -> str:
    """`label=value` for a data key, or "" when it is absent or empty."""
    value = data.get(key)
    return "" if value in (None, "", [], {}) else f"{label or key}={preview(value)}"


def _thread_seq(data: dict[str, JsonValue]) -> str:
    """Where the event's entry landed in the thread (`seq` of data is the thread's, not the trace's)."""
    return f"thread#{data['seq']}" if "seq" in data else ""


def _tokens(data: dict[str, JsonValue]) -> str:
    """`tokens=in+out` (or the total) from a `usage` dict or from the data itself."""
    nested = data.get("usage")
    usage = nested if isinstance(nested, dict) else data
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return f"tokens={prompt}+{completion}"
    total = usage.get("total_tokens")
    return f"tokens={total}" if isinstance(total, int) else ""


def _tool_names(calls: JsonValue) -> str:
    """Names of the tool calls an LLM turn requested (a list of names or of call dicts)."""
    if not isinstance(calls, list) or not calls:
        return ""
    names = [str(c.get("name", "?")) if isinstance(c, dict) else str(c) for c in calls]
    return "calls=" + ",".join(names)


def _envelope(outcome: JsonValue) -> dict[str, JsonValue]:
    """A tool outcome as a dict: given as one, or as the JSON text of `{"ok": .., "result"|"error": ..}`."""
    if isinstance(outcome, str):
        try:
            outcome = json.loads(outcome)
        except ValueError:  # cut short by the workflow's preview limit
            return {}
    return outcome if isinstance(outcome, dict) else {}


def _error_text(error: JsonValue) -> str:
    """`Type: message` for an error dict, else a preview of whatever was recorded."""
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        if message is not None:
            return f"{kind}: {preview(message)}" if kind else preview(message)
    return preview(error)


def _summary(event: TraceEvent) -> list[str]:
    """The kind-specific leading fragments of an event line."""
    d = event.data
    name = d.get("name", d.get("tool"))
    parts: list[str] = []
    match event.kind:
        case "request_started":
            parts += [_kv(d, "query"), _kv(d, "model"), _kv(d, "tools")]
        case "llm_started":
            parts += [_kv(d, "model"), _kv(d, "messages"), _kv(d, "attempt")]
        case "llm_completed":
            parts += [_kv(d, "finish_reason", "finish"), _tokens(d), _tool_names(d.get("tool_calls"))]
            parts.append(_kv(d, "content", "text"))
        case "tool_started":
            args = d.get("arguments")
            parts.append(f"{name}({preview(args) if args is not None else ''})")
        case "tool_completed":
            parts.append(f"{name} {'ok' if d.get('ok') else 'error'}")
            outcome = _envelope(d.get("outcome", d))
            if outcome.get("error") is not None:
                parts.append(_error_text(outcome["error"]))
            elif "result" in outcome:
                parts.append(f"-> {preview(outcome['result'])}")
            elif "outcome" in d:
                parts.append(f"-> {preview(d['outcome'])}")
            parts.append(_kv(d, "attempts"))
        case "input_injected" | "input_rejected":
            parts.append(str(d.get("kind", "")))
            if event.kind == "input_rejected":
                parts.append(f"rejected: {d.get('reason', '?')}")
                parts.append(f"({d['message']})" if d.get("message") else "")
            parts += [_kv(d, "source", "from"), _thread_seq(d), _kv(d, "content")]
        case "context_op_deferred" | "context_op_applied" | "context_op_rejected":
            parts += [str(d.get("type", "")), _kv(d, "context_ref", "lane"), _kv(d, "reason"), _thread_seq(d)]
        case "request_completed":
            parts += [_kv(d, "termination_reason", "reason"), _kv(d, "result", "answer")]
        case "request_failed":
            parts.append(_error_text(d.get("error", d.get("message"))))
        case "request_cancelled":
            parts.append(_kv(d, "reason"))
    dropped = d.get("dropped_inputs")
    parts.append(f"dropped {dropped} queued input(s)" if isinstance(dropped, int) and dropped else "")
    if isinstance(d.get("duration_ms"), int):
        parts.append(f"{d['duration_ms']}ms")
    return parts


def event_details(event: TraceEvent) -> str:
    """The key data of an event: its summary, its ids, then any keys the summary does not cover."""
    parts = _summary(event)
    for label, value in (("call", event.call_id), ("input", event.input_id), ("op", event.op_id)):
        if value:
            parts.append(f"{label}={value}")
    shown = {*_SHOWN[event.kind], "name", "tool", "duration_ms", "dropped_inputs"}
    parts += [f"{k}={preview(v, 40)}" for k, v in event.data.items() if k not in shown and v is not None]
    return " ".join(p for p in parts if p)


def event_line(event: TraceEvent) -> str:
    """One readable, length-capped line for a live trace event."""
    head = f"{event.at:%H:%M:%S} #{event.seq:<3} iter {event.iteration:<2} {event.kind:<19}"
    line = f"{head} {event_details(event)}".rstrip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def ui_link(base_url: str, namespace: str, workflow_id: str) -> str:
    """The Web UI page of a workflow, so the user can open its history in one click."""
    ns, wid = quote(namespace, safe=""), quote(workflow_id, safe="")
    return f"{base_url.rstrip('/')}/namespaces/{ns}/workflows/{wid}"


def event_style(kind: TraceKind) -> str:
    """The terminal style of a line, so outcomes and tool activity stand out."""
    return _STYLES.get(kind, "")


def new_events(trace: Trace, last_seq: int) -> list[TraceEvent]:
    """Events not printed yet (seq is 1-based and increasing), in seq order."""
    return sorted((e for e in trace.events if e.seq > last_seq), key=lambda e: e.seq)


def usage_line(usage: Usage, iterations: int | None = None) -> str:
    """Token usage in one line; iterations when known."""
    line = (
        f"usage: {usage.total_tokens} tokens ({usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion) in {usage.llm_calls} LLM call(s)"
    )
    return line if iterations is None else f"{line}, {iterations} iteration(s)"


def result_lines(result: RunResult) -> list[str]:
    """The end of a followed run: outcome, final answer or reason, usage."""
    reason = f" ({result.termination_reason})" if result.termination_reason else ""
    lines = [f"run {result.status}{reason}"]
    if result.result is not None:
        lines.append(f"answer: {result.result}" if result.status == "completed" else f"note: {result.result}")
    if result.error is not None:
        lines.append(f"error: {result.error.type}: {result.error.message}")
    lines.append(usage_line(result.usage, result.iterations))
    return lines


def ack_line(ack: Ack) -> str:
    """What an acknowledging Update answered, as the user should read it."""
    note = f" ({ack.message})" if ack.message else ""
    match ack.status:
        case "queued":
            return f"queued {ack.input_id or ''}".rstrip() + note
        case "rejected":
            return f"rejected: {ack.reason or 'no reason given'}{note}"
        case "deferred" | "applied" | "duplicate":
            return f"{ack.status} {ack.op_id or ''}".rstrip() + note
        case "accepted":
            return "accepted" + note


def new_table(title: str, *columns: str, header: bool = True) -> Table:
    """An empty table whose long cells wrap instead of being cut."""
    table = Table(title=title, show_header=header, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def add_row(table: Table, *cells: str) -> None:
    """Add a row of plain text: cells hold user and model content, never console markup."""
    table.add_row(*(Text(cell) for cell in cells))


def state_table(state: RunState) -> Table:
    """The `state` query as a field/value table."""
    op = state.pending_context_op
    rows = [
        ("status", state.status),
        ("request_id", state.request_id),
        ("run_id", state.run_id),
        ("iteration", str(state.iteration)),
        ("usage", usage_line(state.usage).removeprefix("usage: ")),
        ("queued inputs", str(state.queued_inputs)),
        ("active lane", state.active_context_ref),
        ("pending context op", f"{op.operation.type} {op.op_id} (lane {op.context_ref})" if op else "-"),
        ("termination", state.termination_reason or "-"),
        ("result", state.result if state.result is not None else "-"),
        ("error", f"{state.error.type}: {state.error.message}" if state.error else "-"),
    ]
    table = new_table("run state", "field", "value", header=False)
    for key, value in rows:
        add_row(table, key, value)
    return table


def tool_calls_table(state: RunState) -> Table:
    """The current round's tool calls."""
    table = new_table(
        "tool calls (current round)", "id", "name", "arguments", "status", "attempts", "duration"
    )
    for call in state.pending_tool_calls:
        duration = f"{call.duration_ms}ms" if call.duration_ms is not None else "-"
        add_row(table, call.id, call.name, preview(call.arguments), call.status, str(call.attempts), duration)
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
    for index, message in enumerate(context.messages):
        text = preview(message.content, 160)
        if message.tool_calls:
            text = f"{text} [calls {', '.join(c.name for c in message.tool_calls)}]".strip()
        add_row(table, str(index), message.role, text)
    return table


def trace_table(trace: Trace) -> Table:
    """The whole trace, one row per event."""
    title = "trace" + (" (truncated)" if trace.truncated else "")
    table = new_table(title, "seq", "at", "iter", "kind", "details")
    for event in sorted(trace.events, key=lambda e: e.seq):
        cells = (str(event.seq), f"{event.at:%H:%M:%S}", str(event.iteration), event.kind)
        add_row(table, *cells, event_details(event))
    return table
