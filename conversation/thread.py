"""The thread: an append-only log of conversation entries, the source of truth.

Entries are never mutated. `seq` is assigned on append (0-based: the entry's index
in the whole log, also once a session has archived its older entries); a seq
supplied by the caller is ignored, so a log that is copied entry by entry into
another thread (a session appending a run's entries) gets fresh, gap-free numbers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from conversation.attachments import Attachment
from conversation.messages import Context, OmitNone, Role, ToolCall

DEFAULT_CONTEXT_REF = "default"

OperationType = Literal["replace", "switch"]
OperationReason = Literal["manual", "restore", "compaction", "system"]
OPERATION_TYPES: tuple[str, ...] = ("replace", "switch")
OPERATION_REASONS: tuple[str, ...] = ("manual", "restore", "compaction", "system")


class MessagePayload(OmitNone):
    """Payload of an `ai_message` entry.

    `request_id` and `run_id` name the request and run that appended the message. A run
    leaves them out of its own thread (all of it is the run's; its result names both
    once); a session fills them in when it appends a run's entries.
    """

    role: Role
    content: str = ""
    context_ref: str = DEFAULT_CONTEXT_REF
    request_id: str | None = None
    run_id: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    thinking: str | None = None
    attachments: list[Attachment] | None = None


class ContextOperation(OmitNone):
    """A validated context operation (see `conversation.operations` for validation)."""

    type: OperationType
    reason: OperationReason = "manual"
    result_context: Context | None = None
    base_seq: int | None = None
    meta: dict[str, JsonValue] = {}


class ContextOpPayload(BaseModel):
    """Payload of an `ai_context_operation` entry."""

    model_config = ConfigDict(extra="forbid")

    op_id: str
    context_ref: str
    operation: ContextOperation


class MessageEntry(BaseModel):
    """A thread entry recording one LLM message (user, assistant or tool)."""

    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    kind: Literal["ai_message"] = "ai_message"
    at: datetime
    payload: MessagePayload
    refs: dict[str, str] = {}


class ContextOpEntry(BaseModel):
    """A thread entry recording one applied context operation."""

    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    kind: Literal["ai_context_operation"] = "ai_context_operation"
    at: datetime
    payload: ContextOpPayload
    refs: dict[str, str] = {}


Entry = Annotated[MessageEntry | ContextOpEntry, Field(discriminator="kind")]


MUTABLE_PAYLOAD_FIELDS = ("tool_calls", "attachments")
"""The fields of `MessagePayload` that hold a list (`append` copies them; the rest are immutable)."""


def append(entries: list[Entry], entry: Entry, first_seq: int = 0) -> Entry:
    """Append `entry` to `entries` (whose first entry has seq `first_seq`) with the next seq.

    The caller's `seq` is ignored; the stored entry is a copy that shares nothing mutable
    with the caller's object, so later changes to it cannot rewrite the log.
    """
    seq = first_seq + len(entries)
    if isinstance(entry, MessageEntry):
        # A message payload's fields are immutable (strings, frozen tool calls) except the
        # lists in `MUTABLE_PAYLOAD_FIELDS`: copying them and the refs isolates the log as a
        # deep copy would, at a fraction of the cost (this runs for every message).
        payload = entry.payload
        lists = {
            name: list(value)
            for name in MUTABLE_PAYLOAD_FIELDS
            if (value := getattr(payload, name)) is not None
        }
        stored: Entry = entry.model_copy(
            update={"seq": seq, "refs": dict(entry.refs), "payload": payload.model_copy(update=lists)}
        )
    else:
        stored = entry.model_copy(update={"seq": seq}, deep=True)
    entries.append(stored)
    return stored
