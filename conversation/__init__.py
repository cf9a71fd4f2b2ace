"""The conversation model: thread, context, operations and projection.

Pure and deterministic (no I/O, clocks or randomness), so workflows, activities
and tests can all import it. Timestamps are passed in by the caller.
"""

from conversation.messages import Context, Message, Role, ToolCall
from conversation.operations import (
    ContextModifyInput,
    InvalidContextOpError,
    OperationInput,
    validate_operation,
)
from conversation.projection import project
from conversation.state import APPLIED_OPS_CAP, ConversationState
from conversation.thread import (
    DEFAULT_CONTEXT_REF,
    ContextOpEntry,
    ContextOperation,
    ContextOpPayload,
    Entry,
    MessageEntry,
    MessagePayload,
)

__all__ = [
    "APPLIED_OPS_CAP",
    "DEFAULT_CONTEXT_REF",
    "Context",
    "ContextModifyInput",
    "ContextOpEntry",
    "ContextOpPayload",
    "ContextOperation",
    "ConversationState",
    "Entry",
    "InvalidContextOpError",
    "Message",
    "MessageEntry",
    "MessagePayload",
    "OperationInput",
    "Role",
    "ToolCall",
    "project",
    "validate_operation",
]
