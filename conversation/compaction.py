"""Compaction as a context operation: a `replace` with reason `compaction`.

The op's `result_context` is the lane's system prompt, the summary, and the newest
turns verbatim. Its `base_seq` is the last thread seq the summary was computed from:
when the op is deferred (a run was active) the messages the lane received after
`base_seq` are carried into `result_context` at apply time (`rebase`), so deferring a
compaction never drops what the run said. The thread stays append-only: the full
history is still there.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from conversation.messages import Context, Message
from conversation.projection import message_of
from conversation.thread import ContextOperation, ContextOpPayload, Entry, MessageEntry


def compaction_op(
    op_id: str,
    context_ref: str,
    lane: Context,
    keep: list[Message],
    summary: str,
    base_seq: int,
    meta: dict[str, JsonValue],
) -> ContextOpPayload:
    """The replace op that swaps the summarised part of `lane` for `summary`, keeping `keep`."""
    return ContextOpPayload(
        op_id=op_id,
        context_ref=context_ref,
        operation=ContextOperation(
            type="replace",
            reason="compaction",
            result_context=Context(system_prompt=lane.system_prompt, summary=summary, messages=list(keep)),
            base_seq=base_seq,
            meta=meta,
        ),
    )


def rebase(op: ContextOpPayload, thread: Sequence[Entry]) -> ContextOpPayload:
    """Carry the lane's messages appended after the op's `base_seq` into its result (compaction only)."""
    operation = op.operation
    if operation.reason != "compaction" or operation.base_seq is None or operation.result_context is None:
        return op
    later = [
        message_of(entry.payload)
        for entry in thread
        if entry.seq > operation.base_seq
        and isinstance(entry, MessageEntry)
        and entry.payload.context_ref == op.context_ref
    ]
    if not later:
        return op
    result = operation.result_context.model_copy(
        update={"messages": [*operation.result_context.messages, *later]}, deep=True
    )
    return op.model_copy(
        update={"operation": operation.model_copy(update={"result_context": result})}, deep=True
    )
