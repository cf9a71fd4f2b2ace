"""What a request does, read once in the gateway's guard: the one table of actions and their scopes.

`classify(method, path, body)` names the request's operations: each an `action` (`ask`, `steer`,
`approve`, `cancel`, `fork`, `reset`, `schedule`, `read`, ...), the `scope` it needs, its
`target` (an agent and thread, a task, a handle) and whether it starts a run (quotas apply) or
changes state (one audit line). Routes are classified by `ROUTES` (first match wins); the three
protocols that carry several operations in one POST are read from the body: AG-UI (`resume` is an
approval, else an ask), the AI SDK (a last message of the assistant's carries approval decisions,
else it is an ask), A2A JSON-RPC (a message on a task is a steer, or an approval with a data part
`{"approved": ...}`; `tasks/cancel` a cancel), MCP JSON-RPC (`tools/call` of a tool:
`MCP_TOOL_SCOPES`). A body that cannot be read is classified by its route alone (the route then
answers 400). The scope of what is actually done is checked again (`scopes.require`: an MCP tool in
its adapter, an approval in the request core), so a body the guard read one way cannot do another
thing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, cast

from gateway.identity.scopes import ADMIN, APPROVE, ASK, MCP_TOOL_SCOPES, MEMORY_READ, MEMORY_WRITE, SCHEDULES

__all__ = ["ROUTES", "Operation", "classify"]

MAX_TARGET_CHARS = 200
A2A_SEND = frozenset({"message/send", "message/stream", "SendMessage", "SendStreamingMessage"})
A2A_CANCEL = frozenset({"tasks/cancel", "CancelTask"})
MCP_ACTIONS = frozenset({"ask", "steer", "approve", "cancel", "fork"})


@dataclass(frozen=True)
class Operation:
    """One thing a request does."""

    action: str
    scope: str | None
    """The scope it needs (None: any authenticated caller)."""
    target: str = ""
    starts_run: bool = False
    """Asks start runs: the active-request and daily-token quotas apply."""
    audited: bool = False
    """Written to the audit trail (what changes state, and an admin's reads of others' threads)."""


ROUTES: Final[tuple[tuple[str, re.Pattern[str], Operation], ...]] = (
    (
        "POST",
        re.compile(r"^/agui/(?P<agent>[^/]+)$"),
        Operation("ask", ASK, starts_run=True, audited=True),
    ),
    ("GET", re.compile(r"^/agui/(?P<agent>[^/]+)/threads/(?P<thread>[^/]+)/events$"), Operation("read", ASK)),
    (
        "POST",
        re.compile(r"^/ai-sdk/(?P<agent>[^/]+)$"),
        Operation("ask", ASK, starts_run=True, audited=True),
    ),
    ("GET", re.compile(r"^/ai-sdk/(?P<agent>[^/]+)/(?P<thread>[^/]+)/stream$"), Operation("read", ASK)),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/requests$"),
        Operation("ask", ASK, starts_run=True, audited=True),
    ),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/fork$"),
        Operation("fork", ASK, audited=True),
    ),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/reset$"),
        Operation("reset", ASK, audited=True),
    ),
    (
        "PUT",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/webhook$"),
        Operation("configure", ASK, audited=True),
    ),
    ("*", re.compile(r"^/api/identity(/token)?$"), Operation("sign_in", None)),
    ("GET", re.compile(r"^/api/schedules(/.*)?$"), Operation("read", SCHEDULES)),
    (
        "*",
        re.compile(r"^/api/schedules(/(?P<thread>.*))?$"),
        Operation("schedule", SCHEDULES, audited=True),
    ),
    ("GET", re.compile(r"^/api/memory/(?P<agent>[^/]+)(/items/[^/]+)?$"), Operation("read", MEMORY_READ)),
    (
        "*",
        re.compile(r"^/api/memory/(?P<agent>[^/]+)/items/[^/]+$"),
        Operation("remember", MEMORY_WRITE, audited=True),
    ),
    ("GET", re.compile(r"^/api/admin/threads/(?P<agent>.+)$"), Operation("admin_read", ADMIN, audited=True)),
    ("*", re.compile(r"^/api/admin(/.*)?$"), Operation("admin_read", ADMIN, audited=True)),
    ("*", re.compile(r"^/api/.*$"), Operation("read", ASK)),
    ("POST", re.compile(r"^/a2a/(?P<agent>[^/]+)$"), Operation("read", ASK)),
    ("*", re.compile(r"^/mcp$"), Operation("connect", None)),
)
"""(method or `*`, path, operation), first match wins. A path no row names needs no scope (public
paths, and 404s)."""


def classify(method: str, path: str, body: bytes | None) -> list[Operation]:
    """The operations of a request (`body`: the POST body the guard read, if any)."""
    for row_method, pattern, operation in ROUTES:
        match = pattern.match(path)
        if match is None or row_method not in ("*", method):
            continue
        groups = {k: v for k, v in match.groupdict().items() if v}
        base = Operation(
            operation.action,
            operation.scope,
            _target(groups.get("agent"), groups.get("thread")),
            operation.starts_run,
            operation.audited,
        )
        if method != "POST" or body is None:
            return [base]
        if path.startswith("/agui/"):
            return [_agui(base, _json(body), groups.get("agent", ""))]
        if path.startswith("/ai-sdk/"):
            return [_aisdk(base, _json(body), groups.get("agent", ""))]
        if path.startswith("/a2a/"):
            return _a2a(base, _json(body), groups.get("agent", ""))
        if path == "/mcp":
            return _mcp(base, _json(body))
        return [base]
    return []


def _agui(base: Operation, body: object, agent: str) -> Operation:
    fields = _object(body)
    if not fields:
        return base
    target = _target(agent, _text(fields.get("threadId")))
    if fields.get("resume"):
        return Operation("approve", APPROVE, target, audited=True)
    return Operation("ask", ASK, target, starts_run=True, audited=True)


def _aisdk(base: Operation, body: object, agent: str) -> Operation:
    """The AI SDK's chat request: its last message is an ask (user) or approval decisions (assistant)."""
    fields = _object(body)
    messages = _list(fields.get("messages"))
    if not messages:
        return base
    target = _target(agent, _text(fields.get("id")))
    if _object(messages[-1]).get("role") == "assistant":
        return Operation("approve", APPROVE, target, audited=True)
    return Operation("ask", ASK, target, starts_run=True, audited=True)


def _a2a(base: Operation, body: object, agent: str) -> list[Operation]:
    found = [_a2a_call(base, call, agent) for call in _calls(body)]
    return found or [base]


def _a2a_call(base: Operation, call: object, agent: str) -> Operation:
    fields = _object(call)
    method = fields.get("method")
    params = _object(fields.get("params"))
    if method in A2A_CANCEL:
        return Operation("cancel", ASK, _target(agent, _text(params.get("id"))), audited=True)
    if method not in A2A_SEND:
        return base
    message = _object(params.get("message"))
    task = _text(message.get("taskId")) or _text(message.get("task_id"))
    if task:
        if _has_decision(message.get("parts")):
            return Operation("approve", APPROVE, _target(agent, task), audited=True)
        return Operation("steer", ASK, _target(agent, task), audited=True)
    context = _text(message.get("contextId")) or _text(message.get("context_id"))
    return Operation("ask", ASK, _target(agent, context), starts_run=True, audited=True)


def _has_decision(parts: object) -> bool:
    """Whether a message's parts hold an approval decision (a data part with `approved`)."""
    for part in _list(parts)[:50]:
        data = _object(_object(part).get("data"))
        if isinstance(data.get("data"), dict):
            data = _object(data.get("data"))  # 1.0's DataPart wraps the value: {"data": {"data": {...}}}
        if "approved" in data:
            return True
    return False


def _mcp(base: Operation, body: object) -> list[Operation]:
    found: list[Operation] = []
    for call in _calls(body):
        fields = _object(call)
        params = _object(fields.get("params"))
        name = _text(params.get("name"))
        if fields.get("method") != "tools/call" or name is None:
            continue
        arguments = _object(params.get("arguments"))
        handle = _text(arguments.get("handle")) or _text(arguments.get("session"))
        target = _target(_text(arguments.get("agent")), handle)
        scope = MCP_TOOL_SCOPES.get(name, ASK)
        action = name if name in MCP_ACTIONS else "read"
        changes = name in MCP_ACTIONS
        found.append(Operation(action, scope, target, starts_run=name == "ask", audited=changes))
    return found or [base]


def _calls(body: object) -> list[object]:
    """A JSON-RPC body's calls (a batch's first 20)."""
    return _list(body)[:20] or [body]


def _object(value: object) -> dict[str, object]:
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return cast("list[object]", value) if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _target(agent: str | None, thread: str | None) -> str:
    text = "/".join(part for part in (agent, thread) if part)
    return text[:MAX_TARGET_CHARS]


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
