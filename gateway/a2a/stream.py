"""A task's live A2A events, read from its run through the hub (one subscription per run for every viewer).

A stream starts with the task as it stands, then follows the run from its start (so a
resubscribe after a dropped connection, or through another gateway, gets every status update
again) and ends when the task ends (its artifacts, then its final status, once, sent after the
session has recorded the end, so a `tasks/get` right after agrees) or waits for input
(`input-required` with the calls awaiting approval, once the run still lists one of them). It
is `RequestCore.waits.follow` with A2A's view (`_TaskView`):

- text as the model writes it: `working` status updates whose agent message holds the delta
  (metadata `call`, `attempt`: a retried call starts over with a higher attempt). A stream that
  joins late (the run drops a call's deltas from its stream once the thread holds the call's
  answer) gets what it missed in one more such update when the call ends, read from the thread
  (`gateway.core.request_fold`, the fold under every protocol's renderer): the text updates of
  every call's newest attempt add up to its answer;
- each step of the run (model call, tool call and result, approval decided, steer taken):
  a `working` status update with a data part `{"event": kind, "call_id"?, "data": ...}`;
- the end: the `answer` artifact (text) and the `output` artifact (structured output, when the
  agent has one), then `completed`, `failed` (message `code: message`) or `canceled`, with the
  request's usage in the metadata.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.server.events.event_queue import Event
from a2a.types.a2a_pb2 import Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent

from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry
from gateway.a2a.tasks import TaskRef, agent_message, awaiting_status, task_of, to_struct
from gateway.context import GatewayContext
from gateway.core import Ended, Paused, RequestCore, RunEnd, ended_state
from gateway.core.request_fold import FoldEvent, PartWritten, RequestFold
from gateway.feed.hub import HubItem

__all__ = ["STOPPING_STATES", "task_events"]

STATUS_KINDS = frozenset(
    {
        "request_started",
        "llm_interrupted",
        "tool_started",
        "tool_completed",
        "tool_round_interrupted",
        "approval_decided",
        "agent_started",
        "input_injected",
        "output_invalid",
    }
)
"""Trace events that become a `working` status update (the rest are internal bookkeeping)."""
STOPPING_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
    }
)
"""States a stream ends at: the terminal ones and `input-required` (the next message continues)."""


def status_event(ref: TaskRef, status: TaskStatus, **metadata: Any) -> TaskStatusUpdateEvent:
    """A status update of the task."""
    event = TaskStatusUpdateEvent(task_id=ref.task_id, context_id=ref.context_id, status=status)
    if metadata:
        event.metadata.CopyFrom(to_struct(metadata))
    return event


async def task_events(
    ctx: GatewayContext,
    core: RequestCore,
    ref: TaskRef,
    *,
    first: Task | None = None,
    run_id: str | None = None,
) -> AsyncIterator[Event]:
    """The task, then its events until it ends or waits for input (see the module docstring).

    Raises:
        GatewayError: no such task for this principal and agent (`not_found`).
    """
    if first is None:
        state = await core.reads.state(ref.thread, ref.request_id)
        first, run_id = task_of(ref, state), state.run_workflow_id
        if state.status == "queued":  # waits behind another request: until it starts
            yield first
            await core.waits.until_started(ref.thread, ref.request_id)
            now = task_of(ref, await core.reads.state(ref.thread, ref.request_id), history=False)
            yield status_event(ref, now.status)
            if now.status.state in STOPPING_STATES:
                return
            first = None
    if first is not None:
        yield first
        if first.status.state in STOPPING_STATES:
            return
    assert run_id is not None
    async for step in core.waits.follow(ref.thread, ref.request_id, run_id, _TaskView(ref)):
        if isinstance(step, Paused):
            yield status_event(ref, awaiting_status(ref, step.pending))
        elif isinstance(step, Ended):
            for final in _final_of(ref, step.end):
                yield final
        else:
            yield step


class _TaskView:
    """A2A's `RequestView`: a task's text and steps as `working` status updates (its end: `_final_of`)."""

    def __init__(self, ref: TaskRef) -> None:
        self._ref = ref
        self._fold = RequestFold(ref.request_id, kinds=("text",))
        self.asked: tuple[str, ...] = ()

    async def show(self, item: HubItem) -> list[Event]:
        ref, event = self._ref, item.event
        self.asked = ()
        if isinstance(event, DeltaEvent):
            return [
                _text_event(ref, written.part.call, written.part.attempt, str(event.seq), written.text)
                for written in _written(self._fold.delta(event))
            ]
        kind = event.event.kind
        data = event.event.data
        entries: list[MessageEntry] = []
        if kind == "llm_completed" and isinstance(call := data.get("call"), int):
            chars = data.get("content_chars")
            if not (isinstance(chars, int) and self._fold.streamed_all(call, chars)):  # else no thread read
                entries = list((await item.enriched()).entries)
        shown: list[Event] = [
            _text_event(ref, written.part.call, written.part.attempt, "rest", written.text)
            for written in _written(self._fold.trace(event.event, entries))
        ]
        if kind == "approval_requested":
            self.asked = (event.event.call_id or "",)
        if kind in STATUS_KINDS or kind == "approval_requested":
            shown.append(_step_event(ref, event))
        return shown


def _text_event(ref: TaskRef, call: int, attempt: int, part: str, text: str) -> TaskStatusUpdateEvent:
    message = agent_message(
        ref, f"{ref.task_id}/d{call}.{attempt}.{part}", [new_text_part(text)], call=call, attempt=attempt
    )
    return status_event(ref, TaskStatus(state=TaskState.TASK_STATE_WORKING, message=message), delta=True)


def _written(folded: list[FoldEvent]) -> list[PartWritten]:
    """The text a fold's events add (A2A names no part's opening or closing)."""
    return [event for event in folded if isinstance(event, PartWritten)]


def _step_event(ref: TaskRef, item: TraceItem) -> TaskStatusUpdateEvent:
    trace = item.event
    step: dict[str, Any] = {"event": trace.kind, "data": trace.data}
    if trace.call_id is not None:
        step["call_id"] = trace.call_id
    message = agent_message(ref, f"{ref.task_id}/t{trace.seq}", [new_data_part(step)])
    return status_event(ref, TaskStatus(state=TaskState.TASK_STATE_WORKING, message=message))


def _final_of(ref: TaskRef, end: RunEnd) -> list[Event]:
    """The ended task's artifacts and final status."""
    if end.rejection is not None:
        text = str(end.rejection)
        message = agent_message(ref, f"{ref.task_id}/end", [new_text_part(text)], code=end.rejection.code)
        return [status_event(ref, TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message))]
    if end.result is None:
        message = agent_message(ref, f"{ref.task_id}/end", [new_text_part("the run could not be read")])
        return [status_event(ref, TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message))]
    state = ended_state(ref.request_id, "", end.result)
    task = task_of(ref, state, history=False)
    events: list[Event] = [
        TaskArtifactUpdateEvent(task_id=ref.task_id, context_id=ref.context_id, artifact=a, last_chunk=True)
        for a in task.artifacts
    ]
    events.append(status_event(ref, task.status, usage=state.usage.model_dump(mode="json")))
    return events
