"""Read access to a conversation that one owner alone changes (a run's `RunRecord`, a session's thread).

Both owners extend `ConversationReader`: everything else reads the conversation
through them (the lane runs append to, its context, the thread's length, applied op
ids; the `OpTarget` of `workflows.op_slot`) and changes it only through their methods.
"""

from __future__ import annotations

from conversation import Context, ConversationState


class ConversationReader:
    """What anyone may read of the conversation its subclass owns."""

    def __init__(self, conversation: ConversationState) -> None:
        """Read `conversation` (the subclass changes it)."""
        self._conversation = conversation

    @property
    def active_context_ref(self) -> str:
        """The lane runs append to."""
        return self._conversation.active_context_ref

    @property
    def context(self) -> Context:
        """The materialized context of the active lane (what an LLM call's view is projected from)."""
        return self._conversation.context

    @property
    def next_seq(self) -> int:
        """The seq the next entry gets (the thread's length)."""
        return self._conversation.next_seq

    def is_applied(self, op_id: str) -> bool:
        """Whether a context op with this id was already applied."""
        return self._conversation.is_applied(op_id)
