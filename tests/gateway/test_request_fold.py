"""`gateway.core.request_fold`: one request's run as text parts and call ends, under every renderer (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry, MessagePayload
from gateway.core.request_fold import (
    CallEnded,
    FoldEvent,
    PartClosed,
    PartOpened,
    PartWritten,
    RequestFold,
    part_id,
)
from tests.aisdk_helpers import RunScript


def test_part_ids_are_durable_facts() -> None:
    assert part_id("req", 2, 1) == "req-c2"
    assert part_id("req", 2, 3) == "req-c2-a3"
    assert part_id("req", 2, 3, "reasoning") == "req-c2-a3-thinking"


def test_a_retry_closes_the_failed_attempts_part_and_late_batches_are_dropped() -> None:
    script = RunScript("req")
    fold = RequestFold("req")
    assert fold.trace(script.trace("llm_started", data={"call": 1}).event) == []
    opened = fold.delta(script.delta(1, "Bro"))
    assert [type(step) for step in opened] == [PartOpened, PartWritten]
    retried = fold.delta(script.delta(1, "Brave", attempt=2))
    assert [type(step) for step in retried] == [PartClosed, PartOpened, PartWritten]
    closed = retried[0]
    assert isinstance(closed, PartClosed) and (closed.part.id, closed.retry) == ("req-c1", 2)
    written = retried[2]
    assert isinstance(written, PartWritten) and (written.part.id, written.part.anchor) == ("req-c1-a2", 1)
    assert fold.delta(script.delta(1, "late", attempt=1)) == []


def test_the_rest_of_the_text_comes_from_the_thread_and_an_ended_call_takes_no_more() -> None:
    script = RunScript("req")
    events = script.llm_call(1, "Only half streamed.", streamed=5)
    fold = RequestFold("req", kinds=("text",))
    out = [step for event, entries in events for step in _feed(fold, event, entries)]
    text = "".join(step.text for step in out if isinstance(step, PartWritten))
    assert text == "Only half streamed."
    ended = out[-1]
    assert isinstance(ended, CallEnded) and (ended.call, ended.message_id, ended.before_origin) == (
        1,
        "req-c1",
        False,
    )
    assert isinstance(out[-2], PartClosed)
    assert fold.delta(script.delta(1, "again")) == []


def test_a_retry_whose_deltas_were_missed_starts_the_answer_over_in_the_next_attempt() -> None:
    # Attempt 1 streamed "Bro" here; attempt 2's deltas never came (the run dropped them once the
    # thread held the answer): the thread's answer does not start with "Bro", so it is written
    # whole in attempt 2's part, never appended to attempt 1's.
    script = RunScript("req")
    fold = RequestFold("req", kinds=("text",))
    fold.trace(script.trace("llm_started", data={"call": 1}).event)
    fold.delta(script.delta(1, "Bro"))
    assert fold.streamed_all(1, 3) and not fold.streamed_all(1, 4)
    answer = script.entry(MessagePayload(role="assistant", content="Brave answer."))
    out = fold.trace(script.trace("llm_completed", data={"call": 1}).event, [answer])
    assert [type(step) for step in out] == [PartClosed, PartOpened, PartWritten, PartClosed, CallEnded]
    retried, written, ended = out[0], out[2], out[4]
    assert isinstance(retried, PartClosed) and (retried.part.id, retried.retry) == ("req-c1", 2)
    assert isinstance(written, PartWritten) and (written.part.id, written.text) == (
        "req-c1-a2",
        "Brave answer.",
    )
    assert isinstance(ended, CallEnded) and ended.message_id == "req-c1-a2"


def test_text_of_a_call_started_at_or_before_the_origin_is_not_rendered() -> None:
    script = RunScript("req")
    events = script.llm_call(1, "The client has this.")
    started = events[0][0]
    assert isinstance(started, TraceItem)
    fold = RequestFold("req", origin=started.event.seq)
    out = [step for event, entries in events for step in _feed(fold, event, entries)]
    assert len(out) == 1
    ended = out[0]
    assert isinstance(ended, CallEnded) and ended.before_origin and ended.content == "The client has this."


def _feed(
    fold: RequestFold, event: DeltaEvent | TraceItem, entries: Sequence[MessageEntry]
) -> list[FoldEvent]:
    if isinstance(event, DeltaEvent):
        return fold.delta(event)
    return fold.trace(event.event, entries)
