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
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts import RunResult, Segment, SegmentRef, ThreadPage, ThreadQuery
    from contracts.activities import ARCHIVE_SEGMENT_ACTIVITY, READ_SEGMENT_ACTIVITY
    from contracts.thread import entry_size, page_of
    from conversation import Context, ContextOpEntry, ContextOpPayload, ConversationState, Entry, MessageEntry
    from conversation.budget import BYTES_PER_TOKEN, trim_to_view
    from conversation.compaction import rebase
    from conversation.policy import ContextPolicy

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


class SessionThread:
    """The conversation in memory, its archive, and the lane window."""

    def __init__(
        self, conversation: ConversationState, archive: list[SegmentRef], window_tokens: int
    ) -> None:
        """Continue from a carried conversation (no entries in memory) or a new one."""
        self.conversation = conversation
        self.archive = archive
        self.window_tokens = window_tokens
        self.conversation.window_chars = window_chars(window_tokens)
        self.tail_chars = sum(entry_size(entry) for entry in conversation.thread)

    def widen(self, policy: ContextPolicy) -> None:
        """Keep enough of each lane for `policy`'s budget from now on (windows only grow)."""
        if policy.input_budget > self.window_tokens:
            self.window_tokens = policy.input_budget
            self.conversation.window_chars = window_chars(self.window_tokens)

    def context_for(self, policy: ContextPolicy) -> Context:
        """What a run under `policy` starts from: the active lane, from where its view can begin."""
        context = self.conversation.context
        return trim_to_view(context, policy) if policy.token_estimator == "heuristic" else context

    def append_run(self, result: RunResult) -> int | None:
        """Append a run's entries; return the session seq of its final answer (if it had one)."""
        answer: int | None = None
        for offset, entry in enumerate(result.entries):
            if isinstance(entry, ContextOpEntry):
                stored: Entry | None = self.conversation.apply_operation(entry.payload, entry.at, entry.refs)
            else:
                payload = entry.payload.model_copy(
                    update={"request_id": result.request_id, "run_id": result.run_id}
                )
                stored = self.conversation.append_message(payload, entry.at, entry.refs)
            if stored is not None:
                self.tail_chars += entry_size(stored)
                if result.outcome.answer_seq == result.first_seq + offset:
                    answer = stored.seq
        return answer

    def apply(self, op: ContextOpPayload, refs: dict[str, str], *, rebased: bool = True) -> bool:
        """Apply an op submitted to the session; compactions are rebased onto the current thread.

        Ops copied from a run's result are not rebased: their `base_seq` counts the run's thread.
        """
        entry = self.conversation.apply_operation(
            rebase(op, self.conversation.thread) if rebased else op, workflow.now(), refs
        )
        if entry is not None:
            self.tail_chars += entry_size(entry)
        return entry is not None

    def page(self, query: ThreadQuery) -> ThreadPage:
        """A page of the thread (a segment reference where it starts in the archive)."""
        return page_of(self.conversation.thread, self.conversation.first_seq, query, self.archive)

    async def archive_all(self) -> None:
        """Move every in-memory entry to a segment in the payload store."""
        entries = self.conversation.thread
        if not entries:
            return
        ref = await workflow.execute_activity(
            ARCHIVE_SEGMENT_ACTIVITY,
            Segment(first_seq=self.conversation.first_seq, entries=entries),
            result_type=SegmentRef,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)),
            summary=f"archive entries {entries[0].seq}-{entries[-1].seq}",
        )
        self.archive.append(ref)
        self.conversation.archive_oldest(len(entries))
        self.tail_chars = 0

    async def messages_at(self, seqs: Iterable[int]) -> dict[int, MessageEntry]:
        """The message entries with these seqs, from memory or (rarely) from the archive."""
        found: dict[int, MessageEntry] = {}
        for seq in seqs:
            entry = self.conversation.entry(seq)
            if entry is None:
                entry = await self._archived(seq)
            if isinstance(entry, MessageEntry):
                found[seq] = entry
        return found

    async def _archived(self, seq: int) -> Entry | None:
        ref = next((r for r in self.archive if r.first_seq <= seq <= r.last_seq), None)
        if ref is None:
            return None
        segment = await workflow.execute_activity(
            READ_SEGMENT_ACTIVITY,
            ref,
            result_type=Segment,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=3),
            summary=f"read entries {ref.first_seq}-{ref.last_seq}",
        )
        index = seq - segment.first_seq
        return segment.entries[index] if 0 <= index < len(segment.entries) else None
