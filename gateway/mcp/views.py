"""What the MCP tools take and show: handles, a request's state as a tool result, a thread's messages.

A `session` is the caller's thread id with an agent; a request is addressed by a handle
`<agent>:<session>:<request id>`. Anything that is not one of the caller's handles is
`not_found`, exactly like an unknown one. A request's state shows the core's statuses in MCP's
words: `submitted` (queued), `running`, `input_required` (awaiting approval, with
`pending_approvals`), `completed` (with `answer`, and `output` when the agent has one),
`failed` and `cancelled` (with `error`), and the request's `usage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conversation import MessageEntry
from gateway.context import GatewayContext
from gateway.core import RequestState, Thread, is_request_id, open_thread
from gateway.errors import GatewayError, not_found
from gateway.identity.principal import Principal
from gateway.owners import THREAD_ID_PATTERN

__all__ = ["Handle", "history_item", "parse_handle", "state_view"]

STATUS_WORDS = {"queued": "submitted", "awaiting_approval": "input_required"}
"""The core's statuses MCP names otherwise (the others keep their names)."""


@dataclass(frozen=True)
class Handle:
    """One request of one of the caller's threads."""

    thread: Thread
    request_id: str

    def __str__(self) -> str:
        """The handle's text, as `ask` returns it."""
        return f"{self.thread.agent}:{self.thread.thread_id}:{self.request_id}"


async def parse_handle(ctx: GatewayContext, principal: Principal, handle: str) -> Handle:
    """The caller's request `handle`.

    Raises:
        GatewayError: 404 `not_found` for anything that is not a handle of an agent of this gateway.
    """
    parts = handle.split(":")
    if len(parts) != 3 or not THREAD_ID_PATTERN.fullmatch(parts[1]) or not is_request_id(parts[2]):
        raise not_found("handle")
    agent, session, request_id = parts
    try:
        return Handle(await open_thread(ctx, principal, agent, session), request_id)
    except GatewayError:
        raise not_found("handle") from None


def state_view(handle: Handle, state: RequestState) -> dict[str, Any]:
    """A request's state as a tool's structured result."""
    view: dict[str, Any] = {
        "handle": str(handle),
        "session": handle.thread.thread_id,
        "agent": handle.thread.agent,
        "status": STATUS_WORDS.get(state.status, state.status),
    }
    if state.status == "awaiting_approval":
        view["pending_approvals"] = [
            {"call_id": p.call_id, "tool": p.name, "arguments": p.arguments} for p in state.pending
        ]
    if state.ended:
        view["usage"] = state.usage.model_dump(mode="json")
    if state.error_code is not None:
        view["error"] = {"code": state.error_code, "message": state.error_message}
    if state.status == "completed" and (state.answer is not None or state.output is not None):
        view["answer"] = state.answer
        if state.output is not None:
            view["output"] = state.output
    return view


def history_item(entry: MessageEntry) -> dict[str, Any]:
    """A thread message as `history` shows it."""
    payload = entry.payload
    item: dict[str, Any] = {"seq": entry.seq, "role": payload.role, "content": payload.content}
    if payload.tool_calls:
        item["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in payload.tool_calls
        ]
    if payload.tool_call_id:
        item["tool_call_id"] = payload.tool_call_id
    if payload.request_id:
        item["request_id"] = payload.request_id
    return item
