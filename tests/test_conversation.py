"""Unit tests of the pure conversation model: thread, messages, operations, projection, state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import TypeAdapter, ValidationError

from conversation import (
    APPLIED_OPS_CAP,
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    ContextOpEntry,
    ContextOperation,
    ContextOpPayload,
    ConversationState,
    Entry,
    InvalidContextOpError,
    Message,
    MessageEntry,
    MessagePayload,
    OperationInput,
    Role,
    ToolCall,
    project,
    validate_operation,
)
from conversation.thread import append

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
BASE = "base prompt"


def payload(content: str, role: Role = "user", lane: str = DEFAULT_CONTEXT_REF) -> MessagePayload:
    return MessagePayload(role=role, content=content, context_ref=lane, request_id="req-1", run_id="run-1")


def replace(
    state: ConversationState,
    op_id: str,
    messages: list[Message],
    *,
    lane: str | None = None,
    prompt: str | None = None,
    reason: str = "manual",
) -> ContextOpEntry | None:
    request = ContextModifyInput(
        op_id=op_id,
        context_ref=lane,
        operation=OperationInput(
            type="replace", reason=reason, result_context=Context(system_prompt=prompt, messages=messages)
        ),
    )
    return state.apply_operation(validate_operation(request, state.active_context_ref), T0)


def switch(state: ConversationState, op_id: str, lane: str) -> ContextOpEntry | None:
    request = ContextModifyInput(op_id=op_id, context_ref=lane, operation=OperationInput(type="switch"))
    return state.apply_operation(validate_operation(request, state.active_context_ref), T0)


def user(content: str) -> Message:
    return Message(role="user", content=content)


def contents(context: Context) -> list[str]:
    return [m.content for m in context.messages]


def assert_invariant(state: ConversationState) -> None:
    assert state.context == state.projected()


# --- thread ----------------------------------------------------------------------------------


def test_append_assigns_gap_free_seqs_and_ignores_the_callers_seq() -> None:
    entries: list[Entry] = []
    originals: list[Entry] = [
        MessageEntry(seq=42, at=T0, payload=payload("one")),
        ContextOpEntry(
            seq=-7,
            at=T0,
            payload=ContextOpPayload(op_id="op", context_ref="a", operation=ContextOperation(type="switch")),
        ),
        MessageEntry(seq=0, at=T0, payload=payload("two")),
        MessageEntry(seq=0, at=T0, payload=payload("three")),
    ]
    stored = [append(entries, entry) for entry in originals]

    assert [entry.seq for entry in entries] == [0, 1, 2, 3]
    assert [entry.seq for entry in stored] == [0, 1, 2, 3]
    assert all(s is e for s, e in zip(stored, entries, strict=True))
    # The caller's objects are copies' sources, never the stored entries, and keep their seq.
    assert [entry.seq for entry in originals] == [42, -7, 0, 0]
    assert all(s is not o for s, o in zip(stored, originals, strict=True))
    assert all(
        s.model_dump(exclude={"seq"}) == o.model_dump(exclude={"seq"})
        for s, o in zip(stored, originals, strict=True)
    )


def test_a_log_copied_into_another_thread_gets_fresh_seqs() -> None:
    run_log: list[Entry] = []
    for text in ["a", "b", "c"]:
        append(run_log, MessageEntry(at=T0, payload=payload(text)))
    session: list[Entry] = []
    append(session, MessageEntry(at=T0, payload=payload("earlier")))
    for entry in run_log:
        append(session, entry)

    assert [entry.seq for entry in session] == [0, 1, 2, 3]
    assert [entry.seq for entry in run_log] == [0, 1, 2]


def test_state_thread_only_grows_and_earlier_entries_are_unchanged() -> None:
    state = ConversationState.new(BASE)
    snapshots: list[list[dict[str, object]]] = []
    state.append_message(payload("hi"), T0)
    snapshots.append([e.model_dump() for e in state.thread])
    replace(state, "op-1", [user("summary")], prompt="p1")
    snapshots.append([e.model_dump() for e in state.thread])
    state.append_message(payload("more"), T0 + timedelta(seconds=1))
    snapshots.append([e.model_dump() for e in state.thread])
    switch(state, "op-2", "other")
    snapshots.append([e.model_dump() for e in state.thread])

    final = [e.model_dump() for e in state.thread]
    for snapshot in snapshots:
        assert final[: len(snapshot)] == snapshot
    assert [e.seq for e in state.thread] == [0, 1, 2, 3]
    assert [e.kind for e in state.thread] == [
        "ai_message",
        "ai_context_operation",
        "ai_message",
        "ai_context_operation",
    ]


# --- messages and JSON wire format ---------------------------------------------------------


def test_plain_user_message_omits_absent_optionals_in_json() -> None:
    dumped = payload("hello").model_dump(mode="json")
    assert dumped == {
        "role": "user",
        "content": "hello",
        "context_ref": "default",
        "request_id": "req-1",
        "run_id": "run-1",
    }
    for key in ["tool_calls", "tool_call_id", "name", "thinking"]:
        assert key not in dumped
    assert "tool_calls" not in payload("hello").model_dump_json()

    # Also when nested inside an entry, and for the LLM-facing message.
    entry = MessageEntry(at=T0, payload=payload("hello")).model_dump(mode="json")
    assert "tool_calls" not in entry["payload"]
    assert Message(role="user", content="hi").model_dump(mode="json") == {"role": "user", "content": "hi"}


def test_present_optionals_are_kept_in_json() -> None:
    assistant = MessagePayload(
        role="assistant",
        content="",
        request_id="r",
        run_id="u",
        tool_calls=[ToolCall(id="call-1", name="search", arguments='{"q": 1')],
        thinking="hmm",
    )
    dumped = assistant.model_dump(mode="json")
    assert dumped["tool_calls"] == [{"id": "call-1", "name": "search", "arguments": '{"q": 1'}]
    assert dumped["thinking"] == "hmm"
    assert "tool_call_id" not in dumped

    tool = MessagePayload(
        role="tool", content="42", request_id="r", run_id="u", tool_call_id="call-1", name="search"
    )
    dumped = tool.model_dump(mode="json")
    assert dumped["tool_call_id"] == "call-1"
    assert dumped["name"] == "search"
    assert "tool_calls" not in dumped


def test_switch_operation_omits_result_context_and_base_seq() -> None:
    dumped = ContextOperation(type="switch").model_dump(mode="json")
    assert dumped == {"type": "switch", "reason": "manual", "meta": {}}


def test_entry_union_is_discriminated_by_kind() -> None:
    adapter: TypeAdapter[Entry] = TypeAdapter(Entry)
    message = adapter.validate_python(MessageEntry(at=T0, payload=payload("x")).model_dump(mode="json"))
    assert isinstance(message, MessageEntry)
    op_entry = ContextOpEntry(
        at=T0, payload=ContextOpPayload(op_id="o", context_ref="a", operation=ContextOperation(type="switch"))
    )
    parsed = adapter.validate_json(op_entry.model_dump_json())
    assert isinstance(parsed, ContextOpEntry)
    assert parsed == op_entry
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "something_else", "at": T0, "payload": {}})


def test_extra_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        MessagePayload.model_validate({"role": "user", "request_id": "r", "run_id": "u", "surprise": True})
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "system", "content": "not an LLM role here"})


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


# --- JSON round trip -----------------------------------------------------------------------


def test_conversation_state_round_trips_through_json() -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("hello"), T0, refs={"workflow": "wf-1"})
    state.append_message(
        MessagePayload(
            role="assistant",
            content="calling",
            request_id="req-1",
            run_id="run-1",
            tool_calls=[ToolCall(id="c1", name="search", arguments='{"q": "x"')],
            thinking="let me search",
        ),
        T0 + timedelta(seconds=1),
    )
    state.append_message(
        MessagePayload(
            role="tool",
            content="result",
            request_id="req-1",
            run_id="run-1",
            tool_call_id="c1",
            name="search",
        ),
        T0 + timedelta(seconds=2),
    )
    request = ContextModifyInput(
        op_id="op-1",
        context_ref="a",
        operation=OperationInput(
            type="replace",
            reason="compaction",
            result_context=Context(system_prompt="p1", messages=[user("summary")]),
            base_seq=2,
            meta={"tokens": 123, "nested": {"list": [1, "two", None, True, 2.5]}},
        ),
    )
    state.apply_operation(validate_operation(request, state.active_context_ref), T0 + timedelta(seconds=3))
    switch(state, "op-2", DEFAULT_CONTEXT_REF)

    text = state.model_dump_json()
    restored = ConversationState.model_validate_json(text)

    assert restored == state
    assert restored.model_dump() == state.model_dump()
    assert restored.model_dump_json() == text
    assert [type(entry) for entry in restored.thread] == [
        MessageEntry,
        MessageEntry,
        MessageEntry,
        ContextOpEntry,
        ContextOpEntry,
    ]
    assert restored.thread[0].at == T0
    assert restored.context == restored.projected()
    # The round-tripped state keeps working.
    restored.append_message(payload("after"), T0)
    assert_invariant(restored)


# --- validation of operations --------------------------------------------------------------


def _replace_input(**changes: object) -> ContextModifyInput:
    data: dict[str, object] = {
        "op_id": "op-1",
        "context_ref": "a",
        "operation": {"type": "replace", "reason": "manual", "result_context": {"messages": []}},
    }
    data.update(changes)
    return ContextModifyInput.model_validate(data)


@pytest.mark.parametrize(
    ("request_input", "reason_part"),
    [
        (_replace_input(op_id=""), "op_id is required"),
        (_replace_input(op_id="   "), "op_id is required"),
        (
            _replace_input(operation={"type": "delete", "result_context": {}}),
            "unknown operation type 'delete'",
        ),
        (_replace_input(operation={"result_context": {}}), "unknown operation type ''"),
        (
            _replace_input(operation={"type": "replace", "reason": "whim", "result_context": {}}),
            "unknown operation reason 'whim'",
        ),
        (_replace_input(operation={"type": "replace"}), "a replace operation needs result_context"),
        (_replace_input(context_ref=""), "context_ref must not be blank"),
        (_replace_input(context_ref=" \t"), "context_ref must not be blank"),
        (
            _replace_input(context_ref=None, operation={"type": "switch"}),
            "a switch operation needs context_ref",
        ),
        (
            _replace_input(operation={"type": "switch", "result_context": {}}),
            "a switch operation takes no result_context",
        ),
    ],
)
def test_invalid_ops_are_rejected_with_a_clear_reason_and_leave_the_state_alone(
    request_input: ContextModifyInput, reason_part: str
) -> None:
    state = ConversationState.new(BASE)
    state.append_message(payload("d1"), T0)
    replace(state, "op-0", [user("s")], lane="b", prompt="p")
    before = state.model_dump()

    with pytest.raises(InvalidContextOpError) as caught:
        state.apply_operation(validate_operation(request_input, state.active_context_ref), T0)

    assert reason_part in caught.value.reason
    assert str(caught.value) == caught.value.reason
    assert isinstance(caught.value, ValueError)
    assert state.model_dump() == before


def test_unknown_type_lists_the_valid_ones() -> None:
    with pytest.raises(InvalidContextOpError) as caught:
        validate_operation(_replace_input(operation={"type": "merge"}), DEFAULT_CONTEXT_REF)
    assert caught.value.reason == "unknown operation type 'merge' (expected one of replace, switch)"


def test_valid_operation_is_recorded_as_submitted() -> None:
    op = validate_operation(
        _replace_input(
            operation={
                "type": "replace",
                "reason": "restore",
                "result_context": {"system_prompt": "sp", "messages": [{"role": "user", "content": "x"}]},
                "base_seq": 7,
                "meta": {"by": "operator"},
            }
        ),
        DEFAULT_CONTEXT_REF,
    )
    assert op == ContextOpPayload(
        op_id="op-1",
        context_ref="a",
        operation=ContextOperation(
            type="replace",
            reason="restore",
            result_context=Context(system_prompt="sp", messages=[user("x")]),
            base_seq=7,
            meta={"by": "operator"},
        ),
    )
    switch_op = validate_operation(
        ContextModifyInput(op_id="s", context_ref="lane-2", operation=OperationInput(type="switch")), "a"
    )
    assert switch_op.context_ref == "lane-2"
    assert switch_op.operation.result_context is None


# --- aliasing: the thread must not share mutable objects with callers or the view ------------


def test_mutating_the_appended_payload_afterwards_does_not_rewrite_the_thread() -> None:
    state = ConversationState.new(BASE)
    sent = MessagePayload(
        role="assistant",
        content="draft",
        request_id="r",
        run_id="u",
        tool_calls=[ToolCall(id="c1", name="f")],
    )
    state.append_message(sent, T0)
    recorded = state.thread[0].model_dump()

    sent.content = "edited later"
    assert sent.tool_calls is not None
    with pytest.raises(ValidationError, match="frozen"):  # tool calls are immutable
        sent.tool_calls[0].arguments = '{"edited": true}'
    sent.tool_calls.append(ToolCall(id="c2", name="g"))

    assert state.thread[0].model_dump() == recorded
    assert_invariant(state)


def test_mutating_the_submitted_result_context_afterwards_does_not_rewrite_the_thread() -> None:
    state = ConversationState.new(BASE)
    result_context = Context(system_prompt="p1", messages=[user("summary")])
    request = ContextModifyInput(
        op_id="op-1", operation=OperationInput(type="replace", result_context=result_context)
    )
    state.apply_operation(validate_operation(request, state.active_context_ref), T0)
    recorded = state.thread[0].model_dump()

    result_context.messages.append(user("sneaked in"))

    assert state.thread[0].model_dump() == recorded
    assert_invariant(state)


def test_mutating_tool_calls_in_the_context_does_not_rewrite_a_message_entry() -> None:
    state = ConversationState.new(BASE)
    state.append_message(
        MessagePayload(
            role="assistant", request_id="r", run_id="u", tool_calls=[ToolCall(id="c1", name="f")]
        ),
        T0,
    )
    recorded = state.thread[0].model_dump()

    # E.g. a workflow repairing malformed tool-call arguments in the view it sends to the LLM.
    calls = state.context.messages[0].tool_calls
    assert calls is not None
    with pytest.raises(ValidationError, match="frozen"):
        calls[0].arguments = '{"repaired": true}'

    assert state.thread[0].model_dump() == recorded


def test_mutating_tool_calls_in_the_context_does_not_rewrite_a_replace_entry() -> None:
    state = ConversationState.new(BASE)
    replace(state, "op-1", [Message(role="assistant", tool_calls=[ToolCall(id="c1", name="f")])])
    recorded = state.thread[0].model_dump()

    calls = state.context.messages[0].tool_calls
    assert calls is not None
    with pytest.raises(ValidationError, match="frozen"):
        calls[0].arguments = '{"repaired": true}'
    calls.append(ToolCall(id="c2", name="g"))

    assert state.thread[0].model_dump() == recorded
