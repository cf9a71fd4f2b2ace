"""Messages and operations on the wire: compact JSON, discriminated entries, and a full state round trip."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import TypeAdapter, ValidationError

from conversation import (
    DEFAULT_CONTEXT_REF,
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
from tests.conversation_helpers import BASE, T0, assert_invariant, payload, switch, user

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
