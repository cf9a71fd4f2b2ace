"""`SessionThread.archive_all`'s bookkeeping, without a workflow: archive exactly what was stored.

The archiving activity runs while the session's run works, so entries can arrive
between building the segment and storing it. Those must stay in memory (and count
toward the next archive); only the stored segment's entries leave. A pure test of
the component: `segment_to_archive` and `archived` are the two halves around the
activity call.
"""

from __future__ import annotations

from contracts import Outcome, RunResult, SegmentRef, ThreadQuery
from contracts.thread import entry_size
from conversation import ConversationState, Entry, MessageEntry
from tests.conversation_helpers import T0, payload
from workflows.session.thread import SessionThread


def run_result(request_id: str, *texts: str) -> RunResult:
    """A completed run that appended `texts` as user messages (its own seqs start at 0)."""
    entries: list[Entry] = [MessageEntry(at=T0, payload=payload(text), seq=i) for i, text in enumerate(texts)]
    return RunResult(
        request_id=request_id,
        run_id=f"run-{request_id}",
        outcome=Outcome(status="completed"),
        entries=entries,
    )


def contents(thread: SessionThread) -> list[str]:
    page = thread.page(ThreadQuery(since_seq=thread.first_seq, limit=100))
    return [entry.payload.content for entry in page.entries if isinstance(entry, MessageEntry)]


def test_entries_appended_while_archiving_stay_in_memory() -> None:
    thread = SessionThread(ConversationState.new("base"), [], 0)
    thread.append_run(run_result("r1", "one", "two"))
    segment = thread.segment_to_archive()
    assert segment is not None and [e.seq for e in segment.entries] == [0, 1]

    late = thread.append_run(run_result("r2", "three"))  # arrives while the activity stores `segment`
    assert late is None and [e.seq for e in segment.entries] == [0, 1]  # the segment is a copy

    thread.archived(SegmentRef(digest="d", first_seq=0, last_seq=1, size_bytes=10), segment)
    assert (thread.first_seq, thread.next_seq) == (2, 3)
    assert contents(thread) == ["three"]
    assert [ref.last_seq for ref in thread.archive] == [1]
    assert thread.tail_chars == entry_size(thread.carried().thread[0]) > 0


def test_archiving_everything_leaves_an_empty_tail() -> None:
    thread = SessionThread(ConversationState.new("base"), [], 0)
    assert thread.segment_to_archive() is None
    thread.append_run(run_result("r1", "one", "two"))
    segment = thread.segment_to_archive()
    assert segment is not None
    thread.archived(SegmentRef(digest="d", first_seq=0, last_seq=1, size_bytes=10), segment)
    assert (thread.first_seq, thread.next_seq, thread.tail_chars) == (2, 2, 0)
    assert thread.segment_to_archive() is None
    assert thread.context.messages[-1].content == "two"  # the lane view keeps what was archived
