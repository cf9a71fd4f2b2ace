"""Conversation state: the thread plus the projection of every lane, and how they change.

Invariant (property-tested): `state.context` always equals
`project(thread, state.active_context_ref, base_system_prompt=...)` over the whole
thread. Every mutation goes through `append_message` or `apply_operation`, which
append to the thread first and fold the entry into the lane views second.

A session keeps only the newest part of its thread in memory: `archive_oldest` hands
back the oldest entries (to be stored as a segment) and moves `first_seq` on; the lane
views already contain their effect, so nothing is re-read. With `window_chars` set,
each lane view keeps only its newest messages (see `conversation.projection`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import BaseModel, model_validator

from conversation.messages import Context
from conversation.projection import LaneViews, project
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
    """The in-memory thread, every lane's view, and context-operation bookkeeping.

    Attributes:
        thread: the entries in memory; `thread[i].seq == first_seq + i`.
        first_seq: seq of the first entry in memory (entries before it are archived).
        base_system_prompt: the configured prompt, used until a replace carries one.
        views: the projection of every lane, up to the newest entry.
        active_context_ref: the lane runs append to.
        applied_context_ops: ids of the newest applied ops (dedupe window).
        window_chars: when set, each lane view keeps about this many characters.
    """

    thread: list[Entry] = []
    first_seq: int = 0
    base_system_prompt: str | None = None
    views: LaneViews = LaneViews()
    active_context_ref: str = DEFAULT_CONTEXT_REF
    applied_context_ops: list[str] = []
    window_chars: int | None = None

    @model_validator(mode="after")
    def _views_of_a_bare_thread(self) -> Self:
        """A state given only its thread (a version-1 carry) derives its lane views from it."""
        if self.thread and not self.views.lanes and self.first_seq == 0:
            for entry in self.thread:
                self.views.feed(entry, self.window_chars)
        return self

    def set_window(self, chars: int) -> None:
        """Keep about `chars` characters of each lane view from the next entry on (views already fed stay)."""
        self.window_chars = chars

    @classmethod
    def new(
        cls, base_system_prompt: str | None = None, context_ref: str = DEFAULT_CONTEXT_REF
    ) -> ConversationState:
        """An empty conversation whose active lane is `context_ref`."""
        return cls(base_system_prompt=base_system_prompt, active_context_ref=context_ref)

    @property
    def next_seq(self) -> int:
        """The seq the next entry gets (the thread's length)."""
        return self.first_seq + len(self.thread)

    @property
    def context(self) -> Context:
        """The materialized context of the active lane."""
        return self.lane(self.active_context_ref)

    def lane(self, context_ref: str) -> Context:
        """The materialized context of any lane."""
        return self.views.context(context_ref, self.base_system_prompt)

    def projected(self, context_ref: str | None = None, at_seq: int | None = None) -> Context:
        """The projection of a lane from the thread itself (whole thread in memory only; for checks)."""
        if self.first_seq:
            raise ValueError("the thread's oldest entries are archived: project from the views instead")
        return project(
            self.thread,
            context_ref or self.active_context_ref,
            base_system_prompt=self.base_system_prompt,
            at_seq=at_seq,
        )

    def entry(self, seq: int) -> Entry | None:
        """The entry with this seq, if it is in memory."""
        index = seq - self.first_seq
        return self.thread[index] if 0 <= index < len(self.thread) else None

    def is_applied(self, op_id: str) -> bool:
        """Whether an op with this id was already applied (within the dedupe window)."""
        return op_id in self.applied_context_ops

    def append_message(
        self, payload: MessagePayload, at: datetime, refs: dict[str, str] | None = None
    ) -> MessageEntry:
        """Append an `ai_message` entry, then fold it into its lane's view."""
        entry = append(self.thread, MessageEntry(at=at, payload=payload, refs=refs or {}), self.first_seq)
        assert isinstance(entry, MessageEntry)
        self.views.feed(entry, self.window_chars)
        return entry

    def apply_operation(
        self, op: ContextOpPayload, at: datetime, refs: dict[str, str] | None = None
    ) -> ContextOpEntry | None:
        """Apply a validated op: append its entry, fold it in, make its lane the active one.

        Returns None (and changes nothing) when the op id was already applied.
        """
        if self.is_applied(op.op_id):
            return None
        entry = append(self.thread, ContextOpEntry(at=at, payload=op, refs=refs or {}), self.first_seq)
        assert isinstance(entry, ContextOpEntry)
        self.views.feed(entry, self.window_chars)
        self.active_context_ref = op.context_ref
        self.applied_context_ops = [op.op_id, *self.applied_context_ops][:APPLIED_OPS_CAP]
        return entry

    def set_base_system_prompt(self, prompt: str | None) -> None:
        """Change the configured prompt (lanes without a prompt of their own follow it)."""
        self.base_system_prompt = prompt

    def archive_oldest(self, count: int) -> list[Entry]:
        """Remove and return the oldest `count` in-memory entries (the caller archives them)."""
        taken, self.thread = self.thread[:count], self.thread[count:]
        self.first_seq += len(taken)
        return taken
