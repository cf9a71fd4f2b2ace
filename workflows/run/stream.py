"""The run's live stream: a Workflow Stream carrying its trace events and its LLM calls' deltas.

`ReActRun` hosts one `RunStream` (always, so trace events can be followed with or
without token streaming). The workflow publishes each trace event as a `TraceItem`
(into its own log: no history event); the LLM activity publishes `DeltaEvent`s by
signal when the agent streams. The stream also folds the deltas of the LLM call in
flight into `partial`: what a subscriber has seen of that call, which is what an
interrupting steer records as the `interrupted` assistant entry.

The log stays in workflow memory until truncated. Deltas are held by the durable
messages once their call has ended, so when an LLM call ends the log is cut back to
where the previous call ended: a live subscriber keeps one call of slack, and the log
holds at most about two calls' deltas plus the trace events in between. A subscriber
that falls further behind resumes at the retained base (the `trace` query has every
event). When the run ends, pollers are released so the workflow can close.
"""

from __future__ import annotations

import base64
from dataclasses import replace

from pydantic import ValidationError
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.workflow_streams import (
    PublishEntry,
    PublishInput,
    WorkflowStream,
    WorkflowStreamState,
)

from contracts import TraceEvent
from contracts.stream import EVENTS_TOPIC, DeltaEvent, TraceItem

MAX_PARTIAL_CHARS = 1_000_000
"""The most of a call's streamed text the run keeps for an interrupted entry (the rest is cut)."""


class PartialAnswer:
    """The text streamed so far by one LLM call's latest attempt."""

    def __init__(self, call: int) -> None:
        """Follow call `call` (deltas of other calls are ignored)."""
        self.call = call
        self.attempt = 0
        self._parts: list[str] = []
        self._chars = 0
        self.cut = False

    def add(self, delta: DeltaEvent) -> None:
        """Fold one batch in: a higher attempt starts over; a lower one is stale."""
        if delta.call != self.call or delta.attempt < self.attempt:
            return
        if delta.attempt > self.attempt:
            self.attempt, self._parts, self._chars, self.cut = delta.attempt, [], 0, False
        room = MAX_PARTIAL_CHARS - self._chars
        text = delta.text[:room]
        self.cut = self.cut or len(text) < len(delta.text)
        self._parts.append(text)
        self._chars += len(text)

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._parts)


class RunStream(WorkflowStream):
    """The run's Workflow Stream (topic `events`) and the partial answer of the call in flight."""

    def __init__(self, prior_state: WorkflowStreamState | None = None) -> None:
        """Register the stream's handlers (call from the workflow's `__init__`)."""
        super().__init__(prior_state)
        self._events = self.topic(EVENTS_TOPIC)
        self.partial: PartialAnswer | None = None
        self._previous_end = 0

    def publish_trace(self, event: TraceEvent) -> None:
        """Publish one trace event (to the workflow's own log: no history event)."""
        self._events.publish(TraceItem(event=event))

    def call_started(self, call: int) -> None:
        """LLM call `call` is starting: its deltas become the partial answer."""
        self.partial = PartialAnswer(call)

    def call_ended(self) -> None:
        """The call in flight has ended: cut the log back to where the previous call ended."""
        self.partial = None
        end = self._on_offset()
        self.truncate(self._previous_end)
        self._previous_end = end

    def close(self) -> None:
        """The run has ended: release pollers (they drain the closed run by query)."""
        self.partial = None
        self.detach_pollers()

    def _on_publish(self, payload: PublishInput) -> None:
        """Keep what others publish, except deltas of a call that is no longer in flight.

        An interrupted call's activity hears of its cancel only at its next heartbeat and may
        publish until then: those batches are dropped, so subscribers never see them.
        """
        deltas: list[DeltaEvent] = []
        kept: list[PublishEntry] = []
        for entry in payload.items:
            delta = _delta_of(entry)
            if delta is not None:
                if self.partial is None or delta.call != self.partial.call:
                    continue
                deltas.append(delta)
            kept.append(entry)
        before = self._on_offset()
        super()._on_publish(replace(payload, items=kept) if len(kept) < len(payload.items) else payload)
        if self.partial is not None and self._on_offset() > before:  # not a duplicate batch
            for delta in deltas:
                self.partial.add(delta)


def _delta_of(entry: PublishEntry) -> DeltaEvent | None:
    """The entry's `DeltaEvent`, or None (another topic, or not a delta)."""
    if entry.topic != EVENTS_TOPIC:
        return None
    try:
        raw = Payload.FromString(base64.b64decode(entry.data))
        delta = workflow.payload_converter().from_payload(raw, DeltaEvent)
    except (ValueError, ValidationError, TypeError):
        return None
    return delta if isinstance(delta, DeltaEvent) else None  # pyright: ignore[reportUnnecessaryIsInstance]
