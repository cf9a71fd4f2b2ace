"""Validation of context operations: a bad op gets a clear reason and changes nothing; a valid one is kept."""

from __future__ import annotations

import pytest

from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    ContextOperation,
    ContextOpPayload,
    ConversationState,
    InvalidContextOpError,
    OperationInput,
    validate_operation,
)
from tests.conversation_helpers import BASE, T0, payload, replace, user

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
