"""The conversation model: thread, context, operations and projection.

Pure and deterministic (no I/O, clocks or randomness), so workflows, activities
and tests can all import it. Timestamps are passed in by the caller.
"""

from conversation.budget import (
    SUMMARY_HEADER,
    ModelView,
    ProjectionMeta,
    compaction_split,
    estimate_tokens,
    project_for_model,
    would_drop,
)
from conversation.messages import Context, Message, Role, ToolCall
from conversation.operations import (
    ContextModifyInput,
    InvalidContextOpError,
    OperationInput,
    validate_operation,
)
from conversation.policy import ContextPolicy, resolve_policy
from conversation.projection import LaneView, LaneViews, project
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
    "SUMMARY_HEADER",
    "Context",
    "ContextModifyInput",
    "ContextOpEntry",
    "ContextOpPayload",
    "ContextOperation",
    "ContextPolicy",
    "ConversationState",
    "Entry",
    "InvalidContextOpError",
    "LaneView",
    "LaneViews",
    "Message",
    "MessageEntry",
    "MessagePayload",
    "ModelView",
    "OperationInput",
    "ProjectionMeta",
    "Role",
    "ToolCall",
    "compaction_split",
    "estimate_tokens",
    "project",
    "project_for_model",
    "resolve_policy",
    "validate_operation",
    "would_drop",
]
