"""The conversation state: messages folded into lanes, replace and switch ops, dedupe of applied ops."""

from __future__ import annotations

from conversation import (
    APPLIED_OPS_CAP,
    DEFAULT_CONTEXT_REF,
    Context,
    ConversationState,
    Message,
    MessagePayload,
    ToolCall,
    project,
)
from tests.conversation_helpers import BASE, T0, assert_invariant, contents, payload, replace, switch, user

# --- state: messages and lanes -------------------------------------------------------------


def test_new_state_has_an_empty_context_with_the_configured_prompt() -> None:
    state = ConversationState.new(BASE)
    assert state.context == Context(system_prompt=BASE, messages=[])
    assert state.active_context_ref == DEFAULT_CONTEXT_REF
    assert state.thread == []
    assert state.next_seq == 0
    assert_invariant(state)
    assert project([], "anything", base_system_prompt=BASE) == Context(system_prompt=BASE)


def test_new_states_do_not_share_mutable_defaults() -> None:
    first = ConversationState()
    second = ConversationState()
    first.append_message(payload("only in first"), T0)
    assert second.thread == []
    assert second.context.messages == []


def test_messages_of_the_active_lane_are_folded_into_the_context() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("q"), T0)
    entry = state.append_message(
        MessagePayload(
            role="assistant",
            request_id="r",
            run_id="u",
            tool_calls=[ToolCall(id="c1", name="f", arguments="{}")],
        ),
        T0,
        refs={"activity": "llm-1"},
    )
    state.append_message(
        MessagePayload(role="tool", content="out", request_id="r", run_id="u", tool_call_id="c1", name="f"),
        T0,
    )
    assert entry.seq == 1
    assert entry.refs == {"activity": "llm-1"}
    assert state.next_seq == 3
    assert [m.role for m in state.context.messages] == ["user", "assistant", "tool"]
    assert state.context.messages[1].tool_calls == [ToolCall(id="c1", name="f", arguments="{}")]
    assert state.context.messages[2].tool_call_id == "c1"
    assert state.context.system_prompt == BASE
    assert_invariant(state)


def test_messages_of_a_non_active_lane_do_not_leak_into_the_active_context() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("default 1"), T0)
    state.append_message(payload("side 1", lane="side"), T0)
    state.append_message(payload("default 2"), T0)

    assert contents(state.context) == ["default 1", "default 2"]
    assert_invariant(state)
    assert contents(state.projected("side")) == ["side 1"]

    # When the side lane becomes active, it sees only its own history.
    switch(state, "op-1", "side")
    assert contents(state.context) == ["side 1"]
    assert_invariant(state)


def test_replace_sets_the_context_makes_the_lane_active_and_updates_the_prompt() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("old"), T0)
    entry = replace(state, "op-1", [user("summary")], lane="a", prompt="p1", reason="compaction")

    assert entry is not None
    assert entry.seq == 1
    assert entry.payload.context_ref == "a"
    assert entry.payload.operation.reason == "compaction"
    assert state.active_context_ref == "a"
    assert state.context == Context(system_prompt="p1", messages=[user("summary")])
    assert state.applied_context_ops == ["op-1"]
    assert state.next_seq == 2
    assert_invariant(state)

    state.append_message(payload("after", lane="a"), T0)
    assert contents(state.context) == ["summary", "after"]
    assert_invariant(state)


def test_replace_defaults_to_the_active_lane() -> None:
    state = ConversationState.new(BASE, context_ref="main")
    state.append_message(payload("old", lane="main"), T0)
    entry = replace(state, "op-1", [user("new")])
    assert entry is not None
    assert entry.payload.context_ref == "main"
    assert state.active_context_ref == "main"
    assert contents(state.context) == ["new"]
    assert_invariant(state)


def test_replace_without_a_prompt_keeps_the_current_prompt() -> None:
    state = ConversationState.new(BASE)
    replace(state, "op-1", [user("x")], prompt="p1")
    replace(state, "op-2", [user("y")], prompt=None)
    assert state.context == Context(system_prompt="p1", messages=[user("y")])
    assert_invariant(state)

    fresh = ConversationState.new(BASE)
    replace(fresh, "op-1", [user("z")])
    assert fresh.context.system_prompt == BASE
    assert_invariant(fresh)


def test_the_latest_replace_of_a_lane_is_the_anchor() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("m0"), T0)
    replace(state, "op-1", [user("r1")], prompt="p1")
    state.append_message(payload("m1"), T0)
    replace(state, "op-2", [user("r2")], prompt="p2")
    state.append_message(payload("m2"), T0)

    assert state.context == Context(system_prompt="p2", messages=[user("r2"), user("m2")])
    assert_invariant(state)


def test_replace_then_switch_lanes_and_back() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    replace(state, "op-1", [user("a-summary")], lane="a", prompt="prompt-a")
    state.append_message(payload("a1", lane="a"), T0)
    assert state.context == Context(system_prompt="prompt-a", messages=[user("a-summary"), user("a1")])
    context_a = state.context.model_copy(deep=True)

    # Back to default: its own history; the current prompt is the one set by lane a's replace.
    entry = switch(state, "op-2", DEFAULT_CONTEXT_REF)
    assert entry is not None
    assert entry.payload.operation.type == "switch"
    assert state.active_context_ref == DEFAULT_CONTEXT_REF
    assert state.context == Context(system_prompt="prompt-a", messages=[user("d1")])
    assert_invariant(state)

    state.append_message(payload("d2"), T0)
    state.append_message(payload("a2", lane="a"), T0)  # while a is not active
    assert contents(state.context) == ["d1", "d2"]
    assert_invariant(state)

    # And to a again: its anchor plus everything appended to it since, in seq order.
    switch(state, "op-3", "a")
    assert state.active_context_ref == "a"
    assert state.context == Context(
        system_prompt="prompt-a", messages=[*context_a.messages, Message(role="user", content="a2")]
    )
    assert_invariant(state)
    assert state.applied_context_ops == ["op-3", "op-2", "op-1"]


def test_a_lane_anchored_with_its_own_prompt_keeps_it() -> None:
    state = ConversationState.new(BASE)
    replace(state, "op-1", [user("a")], lane="a", prompt="prompt-a")
    replace(state, "op-2", [user("b")], lane="b", prompt="prompt-b")
    replace(state, "op-3", [user("c")], lane="c")  # no prompt: the current one (prompt-b)
    assert state.context.system_prompt == "prompt-b"
    switch(state, "op-4", "a")
    assert state.context == Context(system_prompt="prompt-a", messages=[user("a")])
    assert_invariant(state)


def test_switch_to_an_empty_lane_gets_the_current_prompt_and_no_messages() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    replace(state, "op-1", [user("summary")], prompt="p1")
    state.append_message(payload("d2"), T0)

    entry = switch(state, "op-2", "fresh")
    assert entry is not None
    assert state.active_context_ref == "fresh"
    assert state.context == Context(system_prompt="p1", messages=[])
    assert_invariant(state)

    # Without any replace, the configured prompt.
    plain = ConversationState.new(BASE)
    plain.append_message(payload("d1"), T0)
    switch(plain, "op-1", "fresh")
    assert plain.context == Context(system_prompt=BASE, messages=[])
    assert_invariant(plain)


def test_switch_to_the_active_lane_is_recorded_and_keeps_the_context() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    before = state.context.model_copy(deep=True)
    entry = switch(state, "op-1", DEFAULT_CONTEXT_REF)
    assert entry is not None
    assert len(state.thread) == 2
    assert state.context == before
    assert_invariant(state)


# --- dedupe and the applied-ops window -----------------------------------------------------


def test_an_op_applied_twice_changes_nothing_the_second_time() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    assert replace(state, "op-1", [user("summary")], lane="a", prompt="p1") is not None
    state.append_message(payload("a1", lane="a"), T0)
    before = state.model_dump()

    # Same op id, different op: still a duplicate.
    assert replace(state, "op-1", [user("other")], lane="b", prompt="p2") is None
    assert switch(state, "op-1", DEFAULT_CONTEXT_REF) is None
    assert state.model_dump() == before
    assert state.is_applied("op-1")
    assert not state.is_applied("op-2")
    assert_invariant(state)


def test_applied_ops_are_most_recent_first_and_capped() -> None:
    assert APPLIED_OPS_CAP == 128
    state = ConversationState.new(BASE)
    total = APPLIED_OPS_CAP + 2
    for n in range(total):
        assert switch(state, f"op-{n}", "a" if n % 2 else "b") is not None

    assert len(state.thread) == total
    assert len(state.applied_context_ops) == APPLIED_OPS_CAP
    assert state.applied_context_ops == [f"op-{n}" for n in reversed(range(2, total))]
    assert not state.is_applied("op-0")
    assert not state.is_applied("op-1")

    # Inside the window: deduped. Dropped from it: applied again.
    assert switch(state, "op-2", "x") is None
    assert len(state.thread) == total
    assert switch(state, "op-0", "x") is not None
    assert len(state.thread) == total + 1
    assert state.applied_context_ops[0] == "op-0"
    assert "op-2" not in state.applied_context_ops
    assert len(state.applied_context_ops) == APPLIED_OPS_CAP
