"""Builders shared by the conversation-model tests: payloads, replace and switch ops, the invariant."""

from __future__ import annotations

from datetime import UTC, datetime

from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    ContextOpEntry,
    ConversationState,
    Message,
    MessagePayload,
    OperationInput,
    Role,
    validate_operation,
)

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
