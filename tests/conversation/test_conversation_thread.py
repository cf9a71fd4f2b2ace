"""The thread: gap-free seqs, append-only growth, and no aliasing with callers or the view."""

from __future__ import annotations

import types
from datetime import timedelta
from typing import Literal, Union, get_args, get_origin

import pytest
from pydantic import ValidationError

from conversation import (
    Context,
    ContextModifyInput,
    ContextOpEntry,
    ContextOperation,
    ContextOpPayload,
    ConversationState,
    Entry,
    Message,
    MessageEntry,
    MessagePayload,
    OperationInput,
    ToolCall,
    validate_operation,
)
from conversation.thread import MUTABLE_PAYLOAD_FIELDS, append
from tests.conversation_helpers import BASE, T0, assert_invariant, payload, replace, switch, user

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


def _leaf_types(annotation: object) -> set[object]:
    origin = get_origin(annotation)
    if origin is Literal:
        return {Literal}
    if origin in (Union, types.UnionType):
        return {leaf for arg in get_args(annotation) for leaf in _leaf_types(arg)}
    return {annotation}


def test_append_copies_every_mutable_field_of_a_message_payload() -> None:
    # `append` copies only these fields of a message (the rest are immutable): a new field
    # holding a list, dict or model must be added to MUTABLE_PAYLOAD_FIELDS, and copied.
    immutable: set[object] = {str, int, type(None), Literal}
    for name, field in MessagePayload.model_fields.items():
        if name not in MUTABLE_PAYLOAD_FIELDS:
            assert _leaf_types(field.annotation) <= immutable, (name, field.annotation)
    assert all(name in MessagePayload.model_fields for name in MUTABLE_PAYLOAD_FIELDS)
