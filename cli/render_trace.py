"""Trace events for the terminal: one line per event (live), their styles, and the trace table.

The workflow decides what goes in a trace event's `data`; the renderer shows the keys
it knows first and any other keys as short `key=value` previews, so a new key still
shows up instead of vanishing.
"""

from __future__ import annotations

import json

from pydantic import JsonValue
from rich.table import Table

from cli.render_text import add_row, new_table, preview
from contracts import Trace, TraceEvent, TraceKind

LINE_CHARS = 400
TRUNCATED_NOTICE = "(the trace is truncated: the run recorded more events than the trace query keeps)"

_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
# Keys each kind's summary already shows; other keys are appended as previews.
_SHOWN: dict[TraceKind, tuple[str, ...]] = {
    "request_started": ("query", "model", "tools"),
    "memory_recalled": ("keys", "problem"),
    "llm_started": ("model", "messages", "attempt"),
    "llm_completed": ("finish_reason", "usage", *_TOKEN_KEYS, "tool_calls", "content"),
    "llm_interrupted": ("chars", "seq", "content"),
    "tool_round_interrupted": ("calls",),
    "tool_started": ("name", "tool", "arguments"),
    "tool_completed": ("ok", "outcome", "result", "error", "attempts"),
    "approval_requested": ("name", "arguments", "deadline"),
    "approval_decided": ("verdict", "approved", "approver", "reason", "edited"),
    "agent_started": ("agent", "workflow_id"),
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
    **dict.fromkeys(("llm_interrupted", "tool_round_interrupted"), "magenta"),
    **dict.fromkeys(("tool_started", "tool_completed"), "yellow"),
    **dict.fromkeys(("approval_requested", "approval_decided"), "bold yellow"),
    **dict.fromkeys(("context_op_applied", "context_op_deferred"), "blue"),
    **dict.fromkeys(("input_rejected", "context_op_rejected"), "red"),
    **dict.fromkeys(("request_failed", "request_cancelled"), "bold red"),
    "request_completed": "bold green",
}


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
        case "memory_recalled":
            parts += [_kv(d, "keys"), _kv(d, "problem")]
        case "llm_started":
            parts += [_kv(d, "model"), _kv(d, "messages"), _kv(d, "attempt")]
        case "llm_completed":
            parts += [_kv(d, "finish_reason", "finish"), _tokens(d), _tool_names(d.get("tool_calls"))]
            parts.append(_kv(d, "content", "text"))
        case "llm_interrupted":
            parts += [_kv(d, "chars"), _thread_seq(d), _kv(d, "content", "text")]
        case "tool_round_interrupted":
            parts.append(_kv(d, "calls"))
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
        case "approval_requested":
            args = d.get("arguments")
            parts += [f"{name}({preview(args) if args is not None else ''})", _kv(d, "deadline", "until")]
        case "approval_decided":
            by = f"by {preview(d['approver'])}" if d.get("approver") else ""
            parts += [str(d.get("verdict", "?")), by, "(edited)" if d.get("edited") else "", _kv(d, "reason")]
        case "agent_started":
            parts += [_kv(d, "agent"), _kv(d, "workflow_id", "child")]
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
        case _:  # a kind without a summary of its own: its data shows as key=value previews
            pass
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
    shown = {*_SHOWN.get(event.kind, ()), "name", "tool", "duration_ms", "dropped_inputs"}
    parts += [f"{k}={preview(v, 40)}" for k, v in event.data.items() if k not in shown and v is not None]
    return " ".join(p for p in parts if p)


def event_line(event: TraceEvent) -> str:
    """One readable, length-capped line for a live trace event."""
    head = f"{event.at:%H:%M:%S} #{event.seq:<3} iter {event.iteration:<2} {event.kind:<19}"
    line = f"{head} {event_details(event)}".rstrip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def event_style(kind: TraceKind) -> str:
    """The terminal style of a line, so outcomes and tool activity stand out."""
    return _STYLES.get(kind, "")


def new_events(trace: Trace, last_seq: int) -> list[TraceEvent]:
    """Events not printed yet (seq is 1-based and increasing), in seq order."""
    return sorted((e for e in trace.events if e.seq > last_seq), key=lambda e: e.seq)


def trace_table(trace: Trace) -> Table:
    """The whole trace, one row per event."""
    title = "trace" + (f" (truncated: {trace.dropped} middle event(s) dropped)" if trace.truncated else "")
    table = new_table(title, "seq", "at", "iter", "kind", "details")
    if trace.rejections:
        counts = ", ".join(f"{kind} x{count}" for kind, count in sorted(trace.rejections.items()))
        table.caption = f"rejections (only the first few are listed): {counts}"
    for event in sorted(trace.events, key=lambda e: e.seq):
        cells = (str(event.seq), f"{event.at:%H:%M:%S}", str(event.iteration), event.kind)
        add_row(table, *cells, event_details(event))
    return table
