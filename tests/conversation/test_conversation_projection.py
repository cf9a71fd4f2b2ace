"""Projection: the context at any seq boundary rebuilt from the thread."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ConversationState,
    project,
)
from tests.conversation_helpers import BASE, T0, assert_invariant, contents, payload, replace, switch, user

# --- projection ----------------------------------------------------------------------------


def test_projection_at_a_seq_boundary_matches_the_context_at_that_time() -> None:
    state = ConversationState.new(BASE)
    recorded: list[tuple[str, Context]] = []

    def record() -> None:
        recorded.append((state.active_context_ref, state.context.model_copy(deep=True)))

    state.append_message(payload("d1"), T0)
    record()
    replace(state, "op-1", [user("s1")], prompt="p1")
    record()
    state.append_message(payload("d2"), T0)
    record()
    switch(state, "op-2", "a")
    record()
    state.append_message(payload("a1", lane="a"), T0)
    record()
    state.append_message(payload("d3"), T0)  # non-active lane
    record()
    replace(state, "op-3", [user("s2")], lane=DEFAULT_CONTEXT_REF)
    record()
    state.append_message(payload("d4"), T0)
    record()

    assert len(recorded) == len(state.thread)
    for seq, (lane, context) in enumerate(recorded):
        assert state.projected(lane, at_seq=seq) == context, seq
        assert project(state.thread, lane, base_system_prompt=BASE, at_seq=seq) == context, seq

    # Spot checks of what the recorded contexts are.
    assert recorded[0][1] == Context(system_prompt=BASE, messages=[user("d1")])
    assert recorded[2][1] == Context(system_prompt="p1", messages=[user("s1"), user("d2")])
    assert recorded[3] == ("a", Context(system_prompt="p1", messages=[]))
    assert recorded[6][1] == Context(system_prompt="p1", messages=[user("s2")])

    # The inclusive boundary: entry 1 (the replace) is taken into account at at_seq=1 only.
    assert contents(state.projected(DEFAULT_CONTEXT_REF, at_seq=0)) == ["d1"]
    assert contents(state.projected(DEFAULT_CONTEXT_REF, at_seq=1)) == ["s1"]
    # Lane a at seq 5 (a default-lane message) is unchanged from seq 4.
    assert state.projected("a", at_seq=5) == recorded[4][1]
    # Before the first entry: empty with the configured prompt; past the end: the whole thread.
    assert state.projected(DEFAULT_CONTEXT_REF, at_seq=-1) == Context(system_prompt=BASE)
    assert state.projected(DEFAULT_CONTEXT_REF, at_seq=10_000) == state.projected(DEFAULT_CONTEXT_REF)


def test_projection_ignores_switch_entries() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    before = {lane: state.projected(lane) for lane in [DEFAULT_CONTEXT_REF, "a"]}
    switch(state, "op-1", "a")
    switch(state, "op-2", DEFAULT_CONTEXT_REF)
    assert {lane: state.projected(lane) for lane in [DEFAULT_CONTEXT_REF, "a"]} == before


def test_projection_does_not_alias_the_thread() -> None:
    state = ConversationState.new(BASE)
    replace(state, "op-1", [user("s1")], prompt="p1")
    projected = state.projected()
    projected.messages.append(user("extra"))
    with pytest.raises(ValidationError, match="frozen"):
        projected.messages[0].content = "edited"
    assert contents(state.projected()) == ["s1"]
    assert_invariant(state)
