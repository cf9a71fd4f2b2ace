"""AG-UI messages of a session's thread (MESSAGES_SNAPSHOT), and the interrupts of pending approvals."""

from __future__ import annotations

import json

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from pydantic import JsonValue

from clients.session_handle import SessionHandle
from contracts.approval import PendingApproval
from conversation import MessageEntry

__all__ = ["SNAPSHOT_ENTRIES", "interrupt_of", "messages_snapshot"]

SNAPSHOT_ENTRIES = 200
"""The newest thread entries a snapshot reads (a snapshot's size is bounded by design)."""


def _message(entry: MessageEntry, message_id: str) -> Message:
    payload = entry.payload
    if payload.role == "user":
        return UserMessage(id=message_id, content=payload.content)
    if payload.role == "tool":
        return ToolMessage(id=message_id, content=payload.content, tool_call_id=payload.tool_call_id or "")
    calls = [
        ToolCall(id=call.id, function=FunctionCall(name=call.name, arguments=call.arguments))
        for call in payload.tool_calls or []
    ]
    return AssistantMessage(id=message_id, content=payload.content or None, tool_calls=calls or None)


async def messages_snapshot(
    session: SessionHandle, request_id: str, run_entries: list[MessageEntry]
) -> MessagesSnapshotEvent:
    """The conversation: the session thread's newest messages before request `request_id`, then its own.

    The request's messages come from its run (`run_entries`): the session's thread holds them only
    once the run has ended. At most `SNAPSHOT_ENTRIES` session entries are read.
    """
    length = (await session.thread_page(0, 1)).length
    messages: list[Message] = []
    async for entry in session.thread(max(0, length - SNAPSHOT_ENTRIES)):
        if isinstance(entry, MessageEntry) and entry.payload.request_id != request_id:
            messages.append(_message(entry, f"m-{entry.seq}"))
    messages += [_message(entry, f"{request_id}-m{entry.seq}") for entry in run_entries]
    return MessagesSnapshotEvent(messages=messages)


def interrupt_of(pending: PendingApproval) -> Interrupt:
    """The AG-UI interrupt of a call awaiting approval: id = call id, the tool and arguments as payload.

    The payload is in `payload` and, for clients that drop fields the schema does not name, in
    `metadata` too.
    """
    try:
        arguments: JsonValue = json.loads(pending.arguments)
    except ValueError:
        arguments = pending.arguments  # truncated or malformed: the raw text
    payload: dict[str, JsonValue] = {
        "tool": pending.name,
        "arguments": arguments,
        "arguments_truncated": pending.arguments_truncated,
    }
    return Interrupt.model_validate(
        {
            "id": pending.call_id,
            "reason": "tool_approval",
            "message": f"Approve calling {pending.name}?",
            "toolCallId": pending.call_id,
            "expiresAt": pending.deadline.isoformat(),
            "payload": payload,  # what the contract names; clients that strip unknown keys
            "metadata": payload,  # (the official JS client does) keep the same in `metadata`
            "responseSchema": RESPONSE_SCHEMA,
        }
    )


RESPONSE_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "required": ["approved"],
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string"},
        "arguments": {"type": "object"},
    },
}
