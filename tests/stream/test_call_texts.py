"""`contracts.call_texts`: the one fold of a run's deltas, where the newest attempt of a call wins (pure)."""

from __future__ import annotations

from contracts.call_texts import CallTexts
from contracts.stream import DeltaEvent, ToolCallDelta


def delta(call: int, attempt: int, text: str = "", thinking: str = "") -> DeltaEvent:
    return DeltaEvent(call=call, attempt=attempt, text=text, thinking=thinking)


def test_a_retry_starts_over_and_a_superseded_attempts_late_batch_is_stale() -> None:
    texts = CallTexts()
    assert texts.add(delta(0, 1, "Bro")) == "started"
    assert texts.add(delta(0, 1, "ken")) == "continued"
    assert texts.add(delta(0, 2, "Who", thinking="Hmm.")) == "started"
    assert texts.add(delta(0, 1, "late")) == "stale"
    assert texts.add(delta(0, 2, "le")) == "continued"
    assert (texts.text(0), texts.calls[0].thinking, texts.attempt(0)) == ("Whole", "Hmm.", 2)
    assert texts.add(delta(1, 1, "Next")) == "started"  # each call has its own attempts
    assert (texts.text(1), texts.text(7), texts.attempt(7, default=1)) == ("Next", "", 1)


def test_tool_call_fragments_are_joined_by_index() -> None:
    texts = CallTexts()
    first = ToolCallDelta(index=0, id="c1", name="calculator", arguments='{"expression": ')
    texts.add(DeltaEvent(call=0, tool_calls=[first]))
    texts.add(DeltaEvent(call=0, tool_calls=[ToolCallDelta(index=0, arguments='"1+1"}')]))
    assert texts.calls[0].tool_calls == {
        0: {"id": "c1", "name": "calculator", "arguments": '{"expression": "1+1"}'}
    }


def test_max_chars_cuts_the_text_and_says_so_until_a_retry_starts_over() -> None:
    texts = CallTexts(max_chars=5)
    texts.add(delta(0, 1, "abc"))
    assert not texts.calls[0].cut
    texts.add(delta(0, 1, "defg"))
    assert (texts.text(0), texts.calls[0].cut) == ("abcde", True)
    texts.add(delta(0, 2, "xy"))
    assert (texts.text(0), texts.calls[0].cut) == ("xy", False)
    texts.clear()
    assert texts.calls == {}
