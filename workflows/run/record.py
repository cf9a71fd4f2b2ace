"""What a run writes down: its thread (the only writer of the run's conversation) and its trace.

A given seed `context` becomes the thread's first entry (a `replace` op with reason
`system`); the run's messages follow on the active lane. Context ops and drained
input are recorded in both the thread and the trace; every trace event carries the
run's current iteration, and goes out on the run's stream as it is recorded.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from contracts import RunInput, ThreadPage, ThreadQuery, Trace, TraceKind
from contracts.thread import page_of
from conversation import (
    ContextOpPayload,
    ConversationState,
    Entry,
    MessagePayload,
    Role,
    ToolCall,
)
from conversation.attachments import Attachment
from workflows.conversation_reader import ConversationReader
from workflows.run.input_queue import QueuedInput
from workflows.run.ledger import RunLedger
from workflows.run.stream import RunStream
from workflows.run.trace_log import TraceLog, preview


class RunRecord(ConversationReader):
    """The run's conversation and trace: the only writer of both (read the conversation freely)."""

    def __init__(
        self, run: RunInput, request_id: str, run_id: str, ledger: RunLedger, stream: RunStream
    ) -> None:
        """Start the thread (seeded with `run.context`, if given) and the trace (mirrored on `stream`)."""
        self._request_id = request_id
        self._run_id = run_id
        self._trace = TraceLog(request_id, run_id)
        self._ledger = ledger
        self._stream = stream
        super().__init__(ConversationState.new(run.config.system_prompt, run.context_ref))
        if run.context is not None:
            seed = ContextOpPayload.model_validate(
                {
                    "op_id": f"seed:{request_id}",
                    "context_ref": run.context_ref,
                    "operation": {"type": "replace", "reason": "system", "result_context": run.context},
                }
            )
            self._conversation.apply_operation(seed, workflow.now(), {"request_id": request_id})
        self._first_seq = self._conversation.next_seq

    @property
    def request_id(self) -> str:
        """The run's request id (a session's, or the run's own)."""
        return self._request_id

    @property
    def run_id(self) -> str:
        """The workflow run's id."""
        return self._run_id

    @property
    def first_seq(self) -> int:
        """The seq of the run's first own entry (after the seed)."""
        return self._first_seq

    @property
    def entries(self) -> list[Entry]:
        """The entries this run appended (after the seed)."""
        return self._conversation.thread[self._first_seq :]

    def page(self, query: ThreadQuery) -> ThreadPage:
        """A page of the thread (it starts with the seed context, if any)."""
        return page_of(self._conversation.thread, 0, query)

    def trace(self) -> Trace:
        """The run's event trace (bounded; see `workflows.run.trace_log`)."""
        return self._trace.snapshot()

    def append(
        self,
        role: Role,
        content: str,
        *,
        tool_calls: list[ToolCall] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        thinking: str | None = None,
        refs: dict[str, str] | None = None,
        attachments: list[Attachment] | None = None,
    ) -> Entry:
        """Append a message of this run to the active lane."""
        payload = MessagePayload(
            role=role,
            content=content,
            context_ref=self._conversation.active_context_ref,
            tool_calls=tool_calls or None,
            tool_call_id=tool_call_id,
            name=name,
            thinking=thinking,
            attachments=attachments,
        )
        return self._conversation.append_message(payload, workflow.now(), refs)

    def apply_op(self, op: ContextOpPayload) -> None:
        """Apply a context op now (immediately when idle, or at the end of the run)."""
        entry = self._conversation.apply_operation(op, workflow.now(), {"request_id": self._request_id})
        if entry is not None:
            data = {"type": op.operation.type, "context_ref": op.context_ref, "seq": entry.seq}
            self.event("context_op_applied", op_id=op.op_id, data=data)

    def add_input(self, item: QueuedInput) -> None:
        """Append drained steer/inject input as a user message."""
        refs = {**item.refs, "input_id": item.input_id, "input_kind": item.kind}
        if item.source:
            refs["source"] = item.source
        entry = self.append("user", item.content, refs=refs)
        data = {"kind": item.kind, "seq": entry.seq, "content": preview(item.content)}
        self.event("input_injected", input_id=item.input_id, data=data)

    def event(
        self,
        kind: TraceKind,
        *,
        call_id: str | None = None,
        input_id: str | None = None,
        op_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Record a trace event at the current iteration, and publish it on the run's stream."""
        event = self._trace.add(
            kind,
            workflow.now(),
            self._ledger.iteration,
            call_id=call_id,
            input_id=input_id,
            op_id=op_id,
            data=data,
        )
        if event is not None:
            self._stream.publish_trace(event)
