"""A recorded request of a thread as an evaluation case ("from a thread", docs/evaluations.md).

The case is pydantic-evals' own form (`{"name", "inputs", "expected_output"}`), ready for a
dataset's `cases`: `inputs` is the request's query, the ids of the files it carried, and every
tool result its run got, in order (`RecordedToolResult`: the tool, the call's arguments, the
result or the error the tool message held), so a new version that calls the same tools with the
same arguments answers from the same facts; `expected_output` is the answer the request gave
(left out when it gave none, a cancelled or failed request). Read from the session's thread,
archived parts included.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

from pydantic import JsonValue

from clients.errors import RejectedError
from contracts.errors import UNKNOWN_REQUEST
from contracts.tools import RecordedToolResult
from conversation import MessageEntry, MessagePayload, ToolCall
from conversation.thread import Entry

__all__ = ["case_from_entries", "case_from_thread"]


async def case_from_thread(thread: AsyncIterator[Entry], request_id: str, name: str) -> dict[str, JsonValue]:
    """The case named `name` of request `request_id`, read from `thread` (a session's entries).

    Stops reading once past the request's entries (they are contiguous).

    Raises:
        RejectedError: `unknown_request` when the thread holds no query of that request.
    """
    found: list[MessagePayload] = []
    async for entry in thread:
        if not isinstance(entry, MessageEntry):
            continue
        if entry.payload.request_id == request_id:
            found.append(entry.payload)
        elif found:
            break
    return case_from_entries(found, request_id, name)


def case_from_entries(messages: Sequence[MessagePayload], request_id: str, name: str) -> dict[str, JsonValue]:
    """The case of request `request_id` from its messages (the query first; see the module docstring).

    Raises:
        RejectedError: `unknown_request` when no query of the request is among them.
    """
    query = next((m for m in messages if m.role == "user"), None)
    if query is None:
        raise RejectedError(UNKNOWN_REQUEST, f"the thread holds no query of request {request_id!r}")
    calls = {call.id: call for m in messages for call in m.tool_calls or ()}
    results = [_recorded(m, calls.get(m.tool_call_id or "")) for m in messages if m.role == "tool"]
    answers = [m for m in messages if m.role == "assistant" and not m.tool_calls and m.content]
    inputs: dict[str, JsonValue] = {"query": query.content}
    if results:
        inputs["tool_results"] = [r.model_dump(mode="json", exclude_none=True) for r in results]
    if query.attachments:  # by id: the thread's principal's files, the evaluation's caller's
        inputs["attachments"] = [a.id for a in query.attachments]
    case: dict[str, JsonValue] = {"name": name, "inputs": inputs}
    if answers:
        case["expected_output"] = answers[-1].content
    return case


def _recorded(message: MessagePayload, call: ToolCall | None) -> RecordedToolResult:
    """A tool message as a recorded result: its envelope `{"ok", "result" | "error"}` read back."""
    arguments: dict[str, JsonValue] | None = None
    if call is not None:
        try:
            parsed: JsonValue = json.loads(call.arguments or "{}")
        except ValueError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else None
    try:
        envelope: JsonValue = json.loads(message.content)
    except ValueError:
        envelope = {"ok": True, "result": message.content}
    if not isinstance(envelope, dict):
        envelope = {"ok": True, "result": envelope}
    tool = message.name or (call.name if call is not None else "")
    if envelope.get("ok") is False:
        error = envelope.get("error")
        text = error.get("message") if isinstance(error, dict) else error
        return RecordedToolResult(name=tool, arguments=arguments, ok=False, error=str(text) if text else None)
    return RecordedToolResult(name=tool, arguments=arguments, result=envelope.get("result"))
