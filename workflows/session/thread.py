"""The session's thread: the newest entries in memory, the rest archived in the payload store.

The session appends each run's entries (fresh seqs) and applies context ops; every
lane's view is kept up to date as entries arrive, windowed to what any LLM call of
the session could be sent (see `window_chars`). While a run works, the session
archives the entries before it as one segment (`archive_segment` activity) once they
add up to `ARCHIVE_CHARS`; continuing as new carries the segment references, the
lane views and the few entries since, so what it carries does not grow with the
conversation, and never waits for storage.
"""

from __future__ import annotations

from collections.abc import Iterable

from temporalio import workflow

from contracts import RunResult, Segment, SegmentRef, ThreadPage, ThreadQuery
from contracts.activities import ARCHIVE_SEGMENT, READ_SEGMENT
from contracts.thread import entry_size, page_of
from conversation import Context, ContextOpEntry, ContextOpPayload, ConversationState, Entry, MessageEntry
from conversation.budget import BYTES_PER_TOKEN, trim_to_view
from conversation.compaction import rebase
from conversation.policy import ContextPolicy
from workflows.activity_calls import call_activity
from workflows.conversation_reader import ConversationReader

ARCHIVE_CHARS = 1024 * 1024
"""When a run starts, the entries before it are archived once the in-memory thread is this large."""
TAIL_CHARS = 4 * ARCHIVE_CHARS
"""The session continues as new once its in-memory thread is this large (one huge run can do that)."""
LANE_WINDOW_MIN_CHARS = 256 * 1024
WINDOW_SLACK = 2
"""Characters kept per token of budget, over the heuristic's 4 bytes a token (for multi-byte text)."""


def window_chars(tokens: int) -> int:
    """The characters a lane view keeps for a largest input budget of `tokens`."""
    return max(LANE_WINDOW_MIN_CHARS, tokens * BYTES_PER_TOKEN * WINDOW_SLACK)


class SessionThread(ConversationReader):
    """The conversation in memory, its archive, and the lane window: the only writer of the conversation."""

    def __init__(
        self, conversation: ConversationState, archive: list[SegmentRef], window_tokens: int
    ) -> None:
        """Continue from a carried conversation (no entries in memory) or a new one."""
        super().__init__(conversation)
        self.archive = archive
        self.window_tokens = window_tokens
        self._conversation.set_window(window_chars(window_tokens))
        self.tail_chars = sum(entry_size(entry) for entry in conversation.thread)

    # ---- reading (for the session's other parts) ------------------------------------------

    @property
    def first_seq(self) -> int:
        """The seq of the first entry in memory (the entries before it are archived)."""
        return self._conversation.first_seq

    def lane(self, context_ref: str | None = None) -> Context:
        """The materialized context of any lane (None: the active lane)."""
        return self._conversation.lane(context_ref or self._conversation.active_context_ref)

    def lane_as_it_stands(self, context_ref: str) -> Context:
        """A lane as a `replace` restores it: its own anchor prompt (not the current), summary, messages."""
        view = self._conversation.views.view(context_ref)
        return Context(system_prompt=view.anchor_prompt, summary=view.summary, messages=list(view.messages))

    def view_start(self, context_ref: str) -> int | None:
        """The seq a lane's view starts at (None: the lane is empty)."""
        return self._conversation.views.view(context_ref).start_seq

    def carried(self) -> ConversationState:
        """The conversation to carry through continue-as-new (read it; only this thread changes it)."""
        return self._conversation

    # ---- changing ------------------------------------------------------------------------

    def set_base_system_prompt(self, prompt: str | None) -> None:
        """The configured prompt changed (lanes without a prompt of their own follow it)."""
        self._conversation.set_base_system_prompt(prompt)

    def restore(self, op: ContextOpPayload) -> None:
        """Apply a restored snapshot's lane: the new session's first entry (left out of `tail_chars`)."""
        self._conversation.apply_operation(op, workflow.now())

    def widen(self, policy: ContextPolicy) -> None:
        """Keep enough of each lane for `policy`'s budget from now on (windows only grow)."""
        if policy.input_budget > self.window_tokens:
            self.window_tokens = policy.input_budget
            self._conversation.set_window(window_chars(self.window_tokens))

    def context_for(self, policy: ContextPolicy) -> Context:
        """What a run under `policy` starts from: the active lane, from where its view can begin."""
        context = self._conversation.context
        return trim_to_view(context, policy) if policy.token_estimator == "heuristic" else context

    def append_run(self, result: RunResult) -> int | None:
        """Append a run's entries; return the session seq of its final answer (if it had one)."""
        answer: int | None = None
        for offset, entry in enumerate(result.entries):
            if isinstance(entry, ContextOpEntry):
                stored: Entry | None = self._conversation.apply_operation(entry.payload, entry.at, entry.refs)
            else:
                payload = entry.payload.model_copy(
                    update={"request_id": result.request_id, "run_id": result.run_id}
                )
                stored = self._conversation.append_message(payload, entry.at, entry.refs)
            if stored is not None:
                self.tail_chars += entry_size(stored)
                if result.outcome.answer_seq == result.first_seq + offset:
                    answer = stored.seq
        return answer

    def apply(self, op: ContextOpPayload, refs: dict[str, str], *, rebased: bool = True) -> bool:
        """Apply an op submitted to the session; compactions are rebased onto the current thread.

        Ops copied from a run's result are not rebased: their `base_seq` counts the run's thread.
        """
        entry = self._conversation.apply_operation(
            rebase(op, self._conversation.thread) if rebased else op, workflow.now(), refs
        )
        if entry is not None:
            self.tail_chars += entry_size(entry)
        return entry is not None

    def page(self, query: ThreadQuery) -> ThreadPage:
        """A page of the thread (a segment reference where it starts in the archive)."""
        return page_of(self._conversation.thread, self._conversation.first_seq, query, self.archive)

    async def archive_all(self) -> None:
        """Move every in-memory entry to a segment in the payload store (entries appended meanwhile stay)."""
        segment = self.segment_to_archive()
        if segment is None:
            return
        ref = await call_activity(ARCHIVE_SEGMENT, segment)
        self.archived(ref, segment)

    def segment_to_archive(self) -> Segment | None:
        """Every in-memory entry as a segment to store (a copy: later appends are not in it), or None."""
        entries = list(self._conversation.thread)
        return Segment(first_seq=self._conversation.first_seq, entries=entries) if entries else None

    def archived(self, ref: SegmentRef, segment: Segment) -> None:
        """`segment` is stored: drop exactly its entries from memory; entries appended since stay."""
        self.archive.append(ref)
        self._conversation.archive_oldest(len(segment.entries))
        self.tail_chars = sum(entry_size(entry) for entry in self._conversation.thread)

    async def messages_at(self, seqs: Iterable[int]) -> dict[int, MessageEntry]:
        """The message entries with these seqs, from memory or (rarely) from the archive."""
        found: dict[int, MessageEntry] = {}
        for seq in seqs:
            entry = self._conversation.entry(seq)
            if entry is None:
                entry = await self._archived(seq)
            if isinstance(entry, MessageEntry):
                found[seq] = entry
        return found

    async def _archived(self, seq: int) -> Entry | None:
        ref = next((r for r in self.archive if r.first_seq <= seq <= r.last_seq), None)
        if ref is None:
            return None
        segment = await call_activity(READ_SEGMENT, ref)
        index = seq - segment.first_seq
        return segment.entries[index] if 0 <= index < len(segment.entries) else None
