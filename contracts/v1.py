"""Reading payloads written by version 1 of the workflows (replays of v1 histories decode them).

Version 1 repeated facts (a result's whole context and trace, a record's query and
answer, a carry's whole thread and traces). These converters map such a payload to
today's shape and leave any other value alone; the models call them in a `before`
validator.
"""

from __future__ import annotations

from typing import Any, cast

QUERY_PREVIEW_CHARS = 200
_OUTCOME = ("status", "termination_reason", "error", "usage", "iterations")


def _as_dict(data: object) -> dict[str, Any] | None:
    return dict(cast(dict[str, Any], data)) if isinstance(data, dict) else None


def run_result(data: object) -> object:
    """A v1 `RunResult` (flat outcome, `thread`, `context`, `trace`) in today's shape."""
    old = _as_dict(data)
    if old is None or "outcome" in old or "status" not in old:
        return data
    outcome = {key: old.pop(key) for key in _OUTCOME if key in old}
    for dropped in ("result", "context", "trace"):
        old.pop(dropped, None)
    return {**old, "outcome": outcome, "entries": old.pop("thread", [])}


def request_record(data: object) -> object:
    """A v1 request record (flat outcome, whole `query` and `result`) in today's shape."""
    old = _as_dict(data)
    if old is None or "outcome" in old or "query" not in old:
        return data
    outcome = {key: old.pop(key) for key in _OUTCOME if key in old}
    old.pop("result", None)
    return {**old, "query_preview": str(old.pop("query"))[:QUERY_PREVIEW_CHARS], "outcome": outcome}


def session_carry(data: object) -> object:
    """A v1 session carry (whole thread with a materialized context, kept traces) in today's shape."""
    old = _as_dict(data)
    if old is None or "traces" not in old:
        return data
    old.pop("traces")
    conversation = _as_dict(old.get("conversation")) or {}
    for key in ("context", "pending_context_op", "projection_cursor_seq"):
        conversation.pop(key, None)
    old["conversation"] = conversation
    return old
