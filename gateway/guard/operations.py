"""What a request does, read once in the guard: the one table of actions, their scopes, and their runs.

`classify(method, path, body)` names the request's operations: each an `action` (`ask`, `steer`,
`approve`, `cancel`, `fork`, `reset`, `erase`, `configure`, `schedule`, `read`, ...), the `scope` it
needs, its target (`agent`, `thread`, `request`: `Operation.target`), whether it starts a run
(the run quotas apply) and whether it changes state (one audit line). `ROUTES` is the table, for
every protocol (first match wins; `HEAD` is classified as `GET`): each row's operation, and,
where one POST may carry another operation than its route's, the reader of its body (`reads_body`
says where the guard reads one):

- AG-UI: `resume` is an approval, else an ask (request: `runId`);
- the AI SDK: a last message of the assistant's carries approval decisions (request: the one its
  id `<request id>:answer` names), a user's is an ask (request: its id);
- background requests (`/api/threads/{agent}/{thread}/requests`): an ask;
- A2A JSON-RPC: a message on a task (`<context>:<request>`) is a steer, or an approval with a
  data part `{"approved": ...}`; `tasks/cancel` a cancel; another message an ask (request: its
  `messageId`);
- MCP JSON-RPC: `tools/call` of a tool (`MCP_TOOL_SCOPES`; a handle `<agent>:<thread>:<request>`);
  `memory_put` and `memory_delete` are `remember`, as the memory routes' writes.

**One rule for runs**: an ask starts a run; steering or deciding an existing request does not
(the quotas never hold it back). An ask with `on_busy: "steer"` (any protocol's busy policy) steers
the thread's running request when there is one: it is marked `steers_running`, and the guard
admits it past the active-runs limit when the thread runs a request (`gateway.guard.admission`).
`interrupt` and `rollback` start a new run in place of the running one: asks.

A body that cannot be read is classified by its route alone (the route then answers 400). The
scope of what is actually done is checked again (`scopes.require`: an MCP tool in its adapter, an
approval in the request core), so a body the guard read one way cannot do another thing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final, cast

from gateway.identity.scopes import (
    ADMIN,
    APPROVE,
    ASK,
    MANAGE,
    MCP_TOOL_SCOPES,
    MEMORY_READ,
    MEMORY_WRITE,
    SCHEDULES,
)
from gateway.owners import is_request_id, request_id_for
from gateway.settings import DEFAULT_AGENT

__all__ = ["AISDK_ANSWER_SUFFIX", "ROUTES", "Operation", "classify", "reads_body"]

MAX_TARGET_CHARS = 200
A2A_SEND = frozenset({"message/send", "message/stream", "SendMessage", "SendStreamingMessage"})
A2A_CANCEL = frozenset({"tasks/cancel", "CancelTask"})
MCP_ACTIONS = frozenset({"ask", "steer", "approve", "cancel", "fork", "delete_thread"})
MCP_ACTION_OF: Final = {"delete_thread": "erase"}
"""An MCP tool whose action has another name on the HTTP routes: audited under that one."""
MCP_MEMORY_WRITES = frozenset({"memory_put", "memory_delete"})
"""The MCP tools that change one's memory: `remember`, audited, as `PUT|DELETE /api/memory/...` are."""
REMEMBER: Final = "remember"
TASK_SEPARATOR = ":"
"""An A2A task id is `<context>:<request>`, an MCP handle `<agent>:<thread>:<request>`."""
AISDK_ANSWER_SUFFIX: Final = ":answer"
"""The AI SDK's assistant message id is `<request id>:answer` (`gateway.aisdk.chunks.ANSWER_SUFFIX`,
a room above the guard: tests/gateway/test_identity_operations.py keeps the two equal)."""
STEER = "steer"


@dataclass(frozen=True)
class Operation:
    """One thing a request does."""

    action: str
    scope: str | None
    """The scope it needs (None: any authenticated caller)."""
    agent: str = ""
    thread: str = ""
    """The thread (or, on `/api/schedules`, the schedule and what is done to it)."""
    request: str = ""
    """The request it acts on, when the call names it (as the gateway names it: `request_id_for`)."""
    starts_run: bool = False
    """Asks start runs: the active-request and daily-token quotas apply."""
    steers_running: bool = False
    """An ask with `on_busy: "steer"`: with a request running in its thread, it steers that one
    and starts no run (the quotas do not hold it back)."""
    audited: bool = False
    """Written to the audit trail (what changes state, and an admin's reads of others' threads)."""

    @property
    def target(self) -> str:
        """What the audit line names: `<agent>/<thread>/<request>` (the parts the call names)."""
        return "/".join(part for part in (self.agent, self.thread, self.request) if part)[:MAX_TARGET_CHARS]


BodyReader = Callable[[Operation, object], list[Operation]]
"""The operations of a POST body (its JSON; `base`: the route's operation, with the path's target)."""


def _agui(base: Operation, body: object) -> list[Operation]:
    fields = _object(body)
    if not fields:
        return [base]
    at = replace(base, thread=_text(fields.get("threadId")))
    if fields.get("resume"):
        return [_approve(at)]
    props = _object(fields.get("forwardedProps"))
    return [_ask(at, _request_for(fields.get("runId")), props.get("on_busy"))]


def _aisdk(base: Operation, body: object) -> list[Operation]:
    """The AI SDK's chat request: its last message is an ask (user) or approval decisions (assistant)."""
    fields = _object(body)
    messages = _list(fields.get("messages"))
    if not messages:
        return [base]
    at = replace(base, thread=_text(fields.get("id")))
    last = _object(messages[-1])
    message_id = _text(last.get("id"))
    if last.get("role") == "assistant":
        return [_approve(replace(at, request=_request_for(message_id.removesuffix(AISDK_ANSWER_SUFFIX))))]
    return [_ask(at, _request_for(message_id), fields.get("on_busy"))]


def _background(base: Operation, body: object) -> list[Operation]:
    return [_ask(base, "", _object(body).get("on_busy"))]


def _a2a(base: Operation, body: object) -> list[Operation]:
    return [_a2a_call(base, call) for call in _calls(body)] or [base]


def _a2a_call(base: Operation, call: object) -> Operation:
    fields = _object(call)
    method = fields.get("method")
    params = _object(fields.get("params"))
    if method in A2A_CANCEL:
        return _on_task(Operation("cancel", ASK, base.agent, audited=True), _text(params.get("id")))
    if method not in A2A_SEND:
        return base
    message = _object(params.get("message"))
    task = _text(message.get("taskId")) or _text(message.get("task_id"))
    if task:
        if _has_decision(message.get("parts")):
            return _on_task(_approve(base), task)
        return _on_task(Operation("steer", ASK, base.agent, audited=True), task)
    context = _text(message.get("contextId")) or _text(message.get("context_id"))
    message_id = _text(message.get("messageId")) or _text(message.get("message_id"))
    metadata = {**_object(params.get("metadata")), **_object(message.get("metadata"))}
    at = replace(base, thread=context)
    return _ask(at, message_id if is_request_id(message_id) else "", metadata.get("on_busy"))


def _on_task(operation: Operation, task: str) -> Operation:
    """`operation` on the A2A task `<context>:<request>`."""
    context, _, request = task.partition(TASK_SEPARATOR)
    return replace(operation, thread=context, request=request)


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
        if fields.get("method") != "tools/call" or not name:
            continue
        arguments = _object(params.get("arguments"))
        handle = _text(arguments.get("handle"))
        if handle:
            agent, _, rest = handle.partition(TASK_SEPARATOR)
            thread, _, request = rest.partition(TASK_SEPARATOR)
        else:
            agent, thread, request = _text(arguments.get("agent")) or DEFAULT_AGENT, "", ""
            thread = _text(arguments.get("session"))
        scope = MCP_TOOL_SCOPES.get(name, ASK)
        action = MCP_ACTION_OF.get(name, name) if name in MCP_ACTIONS else "read"
        at = Operation(action, scope, agent, thread, request)
        if name == "ask":
            found.append(_ask(at, "", arguments.get("on_busy")))
        elif name in MCP_MEMORY_WRITES:
            found.append(replace(at, action=REMEMBER, audited=True))
        else:
            found.append(replace(at, audited=name in MCP_ACTIONS))
    return found or [base]


def _ask(at: Operation, request: str, on_busy: object) -> Operation:
    """An ask at `at`'s target (with `on_busy: "steer"`, one that steers a running request)."""
    return Operation(
        "ask",
        ASK,
        at.agent,
        at.thread,
        request,
        starts_run=True,
        steers_running=on_busy == STEER,
        audited=True,
    )


def _approve(at: Operation) -> Operation:
    return Operation("approve", APPROVE, at.agent, at.thread, at.request, audited=True)


ROUTES: Final[tuple[tuple[str, re.Pattern[str], Operation, BodyReader | None], ...]] = (
    (
        "POST",
        re.compile(r"^/agui/(?P<agent>[^/]+)$"),
        Operation("ask", ASK, starts_run=True, audited=True),
        _agui,
    ),
    (
        "GET",
        re.compile(r"^/agui/(?P<agent>[^/]+)/threads/(?P<thread>[^/]+)/events$"),
        Operation("read", ASK),
        None,
    ),
    (
        "POST",
        re.compile(r"^/ai-sdk/(?P<agent>[^/]+)$"),
        Operation("ask", ASK, starts_run=True, audited=True),
        _aisdk,
    ),
    ("GET", re.compile(r"^/ai-sdk/(?P<agent>[^/]+)/(?P<thread>[^/]+)/stream$"), Operation("read", ASK), None),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/requests$"),
        Operation("ask", ASK, starts_run=True, audited=True),
        _background,
    ),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/fork$"),
        Operation("fork", ASK, audited=True),
        None,
    ),
    (
        "POST",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/reset$"),
        Operation("reset", ASK, audited=True),
        None,
    ),
    (
        "DELETE",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)$"),
        Operation("erase", ASK, audited=True),
        None,
    ),
    (
        "PUT",
        re.compile(r"^/api/threads/(?P<agent>[^/]+)/(?P<thread>[^/]+)/(webhook|title)$"),
        Operation("configure", ASK, audited=True),
        None,
    ),
    ("*", re.compile(r"^/api/identity(/token)?$"), Operation("sign_in", None), None),
    ("GET", re.compile(r"^/api/schedules(/.*)?$"), Operation("read", SCHEDULES), None),
    (
        "*",
        re.compile(r"^/api/schedules(/(?P<thread>.*))?$"),
        Operation("schedule", SCHEDULES, audited=True),
        None,
    ),
    (
        "GET",
        re.compile(r"^/api/memory/(?P<agent>[^/]+)(/items/[^/]+)?$"),
        Operation("read", MEMORY_READ),
        None,
    ),
    (
        "*",
        re.compile(r"^/api/memory/(?P<agent>[^/]+)/items/[^/]+$"),
        Operation(REMEMBER, MEMORY_WRITE, audited=True),
        None,
    ),
    ("POST", re.compile(r"^/api/evals$"), Operation("evaluate", ASK, audited=True), None),
    (
        "GET",
        re.compile(r"^/api/admin/threads/(?P<agent>.+)$"),
        Operation("admin_read", ADMIN, audited=True),
        None,
    ),
    (
        "DELETE",
        re.compile(r"^/api/admin/principals/(?P<agent>[^/]+)$"),
        Operation("erase", ADMIN, audited=True),
        None,
    ),
    ("*", re.compile(r"^/api/admin(/.*)?$"), Operation("admin_read", ADMIN, audited=True), None),
    ("POST", re.compile(r"^/api/agents$"), Operation("manage_agent", MANAGE, audited=True), None),
    (
        "*",
        re.compile(r"^/api/agents/(?P<agent>[^/]+)/(versions|latest)$"),
        Operation("manage_agent", MANAGE, audited=True),
        None,
    ),
    # One's own usage; `agents:admin` sees everyone's there (`gateway.usage`), not by another path.
    ("GET", re.compile(r"^/api/usage$"), Operation("read", ASK), None),
    ("*", re.compile(r"^/api/.*$"), Operation("read", ASK), None),
    ("POST", re.compile(r"^/a2a/(?P<agent>[^/]+)$"), Operation("read", ASK), _a2a),
    ("*", re.compile(r"^/mcp$"), Operation("connect", None), _mcp),
)
"""(method or `*`, path, operation, the reader of its POST body or None), first match wins. A path
no row names needs no scope (public paths, and 404s)."""


def _row(method: str, path: str) -> tuple[Operation, BodyReader | None] | None:
    method = "GET" if method == "HEAD" else method  # a HEAD is a GET without its body: the same scope
    for row_method, pattern, operation, reader in ROUTES:
        match = pattern.match(path)
        if match is None or row_method not in ("*", method):
            continue
        groups = {k: v for k, v in match.groupdict().items() if v}
        return replace(operation, agent=groups.get("agent", ""), thread=groups.get("thread", "")), reader
    return None


def reads_body(method: str, path: str) -> bool:
    """Whether the guard reads this request's body to know what it does (a POST of a row with a reader)."""
    row = _row(method, path)
    return method == "POST" and row is not None and row[1] is not None


def classify(method: str, path: str, body: bytes | None) -> list[Operation]:
    """The operations of a request (`body`: the POST body the guard read, if any)."""
    row = _row(method, path)
    if row is None:
        return []
    base, reader = row
    if method != "POST" or body is None or reader is None:
        return [base]
    return reader(base, _json(body))


def _request_for(value: object) -> str:
    """The request id a protocol's id names (`request_id_for`), or "" without one."""
    text = _text(value)
    return request_id_for(text) if text else ""


def _calls(body: object) -> list[object]:
    """A JSON-RPC body's calls (a batch's first 20)."""
    return _list(body)[:20] or [body]


def _object(value: object) -> dict[str, object]:
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return cast("list[object]", value) if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
