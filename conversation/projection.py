"""Thread -> context projection: the LLM view of one lane, derived from the log.

For a lane, the latest `replace` operation of that lane is the anchor (none: an
empty context); every later `ai_message` of the lane is folded in seq order.
`switch` entries are not folded.

System prompt rule (so that projection depends on the thread alone): the lane's
anchor prompt when its `result_context` has one, else the *current* prompt, which
is the prompt of the latest `replace` of any lane that carried one, else the
configured base prompt. This is what "a replace that carries a system prompt
updates the prompt" and "a new lane starts with the current system prompt" mean.
"""

from __future__ import annotations

from collections.abc import Sequence

from conversation.messages import Context, Message
from conversation.thread import ContextOpEntry, Entry, MessagePayload


def message_of(payload: MessagePayload) -> Message:
    """The LLM message an `ai_message` payload stands for (sharing no objects with it)."""
    message = Message(
        role=payload.role,
        content=payload.content,
        tool_calls=payload.tool_calls,
        tool_call_id=payload.tool_call_id,
        name=payload.name,
        thinking=payload.thinking,
    )
    return message.model_copy(deep=True)


def project(
    entries: Sequence[Entry],
    context_ref: str,
    *,
    base_system_prompt: str | None = None,
    at_seq: int | None = None,
) -> Context:
    """Project the context of lane `context_ref` as of entry `at_seq` (inclusive).

    Args:
        entries: the thread, in seq order.
        context_ref: the lane.
        base_system_prompt: the configured prompt, used until a replace sets one.
        at_seq: the last entry to take into account; None means the whole thread.
    """
    end = len(entries) if at_seq is None else max(0, min(len(entries), at_seq + 1))
    current_prompt = base_system_prompt
    anchor_prompt: str | None = None
    summary: str | None = None
    messages: list[Message] = []
    for entry in entries[:end]:
        if isinstance(entry, ContextOpEntry):
            op = entry.payload.operation
            if op.type != "replace" or op.result_context is None:
                continue
            if op.result_context.system_prompt is not None:
                current_prompt = op.result_context.system_prompt
            if entry.payload.context_ref == context_ref:
                anchor_prompt = op.result_context.system_prompt
                summary = op.result_context.summary
                messages = [m.model_copy(deep=True) for m in op.result_context.messages]
        elif entry.payload.context_ref == context_ref:
            messages.append(message_of(entry.payload))
    prompt = anchor_prompt if anchor_prompt is not None else current_prompt
    return Context(system_prompt=prompt, summary=summary, messages=messages)
