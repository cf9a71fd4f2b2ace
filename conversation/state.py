"""Conversation state: the thread plus its materialized view, and how it changes.

Invariant (property-tested): `state.context` always equals
`project(state.thread, state.active_context_ref, base_system_prompt=...)`.
Every mutation goes through `append_message` or `apply_operation`, which append
to the thread first and update the materialized context second.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from conversation.messages import Context
from conversation.projection import message_of, project
from conversation.thread import (
    DEFAULT_CONTEXT_REF,
    ContextOpEntry,
    ContextOpPayload,
    Entry,
    MessageEntry,
    MessagePayload,
    append,
)

APPLIED_OPS_CAP = 128


class ConversationState(BaseModel):
    """Thread, materialized context and context-operation bookkeeping."""

    thread: list[Entry] = []
    base_system_prompt: str | None = None
    context: Context = Context()
    active_context_ref: str = DEFAULT_CONTEXT_REF
    pending_context_op: ContextOpPayload | None = None
    applied_context_ops: list[str] = []
    projection_cursor_seq: int = -1

    @classmethod
    def new(
        cls, base_system_prompt: str | None = None, context_ref: str = DEFAULT_CONTEXT_REF
    ) -> ConversationState:
        """An empty conversation whose active lane is `context_ref`."""
        return cls(
            base_system_prompt=base_system_prompt,
            context=Context(system_prompt=base_system_prompt),
            active_context_ref=context_ref,
        )

    def projected(self, context_ref: str | None = None, at_seq: int | None = None) -> Context:
        """The projection of a lane (default: the active one) from the thread."""
        return project(
            self.thread,
            context_ref or self.active_context_ref,
            base_system_prompt=self.base_system_prompt,
            at_seq=at_seq,
        )

    def is_applied(self, op_id: str) -> bool:
        """Whether an op with this id was already applied (within the dedupe window)."""
        return op_id in self.applied_context_ops

    def append_message(
        self, payload: MessagePayload, at: datetime, refs: dict[str, str] | None = None
    ) -> MessageEntry:
        """Append an `ai_message` entry, then fold it into the view if its lane is active."""
        entry = append(self.thread, MessageEntry(at=at, payload=payload, refs=refs or {}))
        assert isinstance(entry, MessageEntry)
        if payload.context_ref == self.active_context_ref:
            self.context.messages.append(message_of(payload))
        self.projection_cursor_seq = entry.seq
        return entry

    def apply_operation(
        self, op: ContextOpPayload, at: datetime, refs: dict[str, str] | None = None
    ) -> ContextOpEntry | None:
        """Apply a validated op: append its entry, then re-materialize the context.

        Returns None (and changes nothing) when the op id was already applied.
        """
        if self.is_applied(op.op_id):
            return None
        entry = append(self.thread, ContextOpEntry(at=at, payload=op, refs=refs or {}))
        assert isinstance(entry, ContextOpEntry)
        self.active_context_ref = op.context_ref
        self.context = self.projected(op.context_ref)
        self.applied_context_ops = [op.op_id, *self.applied_context_ops][:APPLIED_OPS_CAP]
        self.projection_cursor_seq = entry.seq
        return entry

    def set_base_system_prompt(self, prompt: str | None) -> None:
        """Change the configured prompt, re-materializing the view so it still equals the projection."""
        self.base_system_prompt = prompt
        self.context = self.projected()
