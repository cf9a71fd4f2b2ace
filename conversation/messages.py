"""LLM-facing message and context models (provider-neutral, OpenAI-shaped)."""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from conversation.attachments import Attachment

Role = Literal["user", "assistant", "tool"]


class OmitNone(BaseModel):
    """Base model whose JSON form omits optional fields that are unset (None).

    The issue's wire format says "absent optionals omitted": a user message must
    not carry `tool_calls: null`, which some providers reject.
    """

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}


class OmitDefaults(BaseModel):
    """Base model whose JSON form leaves out every field that still has its default value.

    For payloads that travel in every activity input or result: what a reader does not
    see is the documented default, and history stays small.
    """

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        defaults = _defaults_of(type(self))
        return {
            key: value
            for key, value in data.items()
            if key not in defaults or getattr(self, key) != defaults[key]
        }


@functools.cache
def _defaults_of(model: type[BaseModel]) -> dict[str, Any]:
    """Each optional field's default, computed once per class (pydantic deep-copies it on every ask)."""
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in model.model_fields.items()
        if not field.is_required()
    }


class ToolCall(BaseModel):
    """One function call requested by the model (immutable).

    `arguments` is the raw JSON text the model produced: it is kept verbatim so that
    malformed arguments are visible in the thread and reported back to the model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    arguments: str = "{}"


class Message(OmitNone):
    """One message of an LLM context.

    Immutable: a message is shared by the lane views, each call's view and the message
    cache without copies; change one with `model_copy(update=...)`. A user message's
    `attachments` are references to files in the payload store (`conversation.attachments`);
    the LLM activity turns them into content parts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    thinking: str | None = None
    attachments: list[Attachment] | None = None


class Context(BaseModel):
    """The materialized LLM view of one lane: a system prompt, an optional summary, ordered messages.

    `summary` is set by compaction (a `replace` op with reason `compaction`): it stands
    for everything before `messages`, and the context policy decides where it goes.
    """

    model_config = ConfigDict(extra="forbid")

    system_prompt: str | None = None
    summary: str | None = None
    messages: list[Message] = []
