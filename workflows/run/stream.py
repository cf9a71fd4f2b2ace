"""The run's live stream: a Workflow Stream carrying its trace events and its LLM calls' deltas.

`ReActRun` hosts one `RunStream` (always, so trace events can be followed with or
without token streaming). The workflow publishes each trace event as a `TraceItem`
(into its own log: no history event); the LLM activity publishes `DeltaEvent`s by
signal when the agent streams, or, when its worker has a live channel, to the channel
only (`live.channel`: those never reach the run). The stream also folds the deltas of
the LLM call in flight that reach it into `partial`: what a subscriber has seen of that
call, which is what an interrupting steer records as the `interrupted` assistant entry
(`workflows.run.llm_step` reads it from the channel when none reached the run).

Only the in-flight call's activity can publish: the run hands it a token in its request
(`StreamTarget.token`, with `max_bytes`, what it may still stream) and drops any other
publish; the handlers survive any payload (`workflows.run.stream_handlers`).

The log stays in workflow memory until truncated. Deltas are held by the durable
messages once their call has ended, so when an LLM call ends the log is cut back to
where the previous call ended: a live subscriber keeps one call of slack, and the log
holds at most about two calls' deltas plus the trace events in between. A subscriber
that falls further behind resumes at the retained base (the `trace` query has every
event). When the run ends, pollers are released so the workflow can close.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput, WorkflowStream

from contracts import TraceEvent
from contracts.call_texts import CallTexts
from contracts.limits import MAX_PARTIAL_CHARS, MAX_STREAMED_BYTES_PER_CALL, MAX_STREAMED_BYTES_PER_RUN
from contracts.llm import StreamTarget
from contracts.stream import DEFAULT_POLL_UPDATES, EVENTS_TOPIC, DeltaEvent, TraceItem, streamed_bytes
from workflows import live_extern as live_sink
from workflows.run.stream_handlers import StreamPolls, delta_of, register_handlers

PATCH_PUBLISH_TOKEN = "stream-publish-token"
"""Runs that hand each streamed call a publish token (older runs accept their calls' deltas without one)."""


class PartialAnswer:
    """The text streamed so far by one LLM call's latest attempt (`contracts.call_texts` folds it)."""

    def __init__(self, call: int) -> None:
        """Follow call `call` (deltas of other calls are ignored)."""
        self.call = call
        self._texts = CallTexts(max_chars=MAX_PARTIAL_CHARS)
        self.streamed = False
        """Whether the call was sent as a streamed one (the run granted it a publish token)."""
        self.received = False
        """Whether any of its deltas reached the run (none do when its worker has a live channel)."""

    def add(self, delta: DeltaEvent) -> None:
        """Fold one batch in: a higher attempt starts over; a lower one is stale."""
        if delta.call == self.call and self._texts.add(delta) != "stale":
            self.received = True

    @property
    def attempt(self) -> int:
        """The newest attempt whose deltas reached the run (0: none)."""
        return self._texts.attempt(self.call)

    @property
    def cut(self) -> bool:
        """Whether the text was cut at `MAX_PARTIAL_CHARS`."""
        known = self._texts.calls.get(self.call)
        return known is not None and known.cut

    @property
    def text(self) -> str:
        """The text so far."""
        return self._texts.text(self.call)


class RunStream(WorkflowStream):
    """The run's Workflow Stream (topic `events`) and the partial answer of the call in flight.

    The library's handlers are replaced by ones that survive any payload (`stream_handlers`):
    a publish that is not the in-flight call's own is dropped and counted, a poll that is
    not a `PollInput` is refused by name, and after `poll_updates` polls by Update the
    rest are refused by name (`poll_budget_spent`) so followers poll by query instead.
    """

    def __init__(self, poll_updates: int = DEFAULT_POLL_UPDATES) -> None:
        """Register the stream's handlers (call from the workflow's `__init__`)."""
        super().__init__(None)
        self._events = self.topic(EVENTS_TOPIC)
        self.partial: PartialAnswer | None = None
        self._previous_end = 0
        self._secret: str | None = None  # set at the first streamed call (None: a run started before tokens)
        self.polls = StreamPolls(poll_updates)
        self.dropped = 0
        """Publishes (and items of them) dropped: not the in-flight call's own, malformed, or over budget."""
        self.streamed_bytes = 0
        """UTF-8 bytes of text, thinking and tool-call arguments the run's calls have streamed."""
        register_handlers(self, self.polls, self.accept, self.drop)

    def publish_trace(self, event: TraceEvent) -> None:
        """Publish one trace event (to the workflow's own log: no history event; and the live channel)."""
        item = TraceItem(event=event)
        self._events.publish(item)
        live_sink.emit(item)

    def call_started(self, call: int) -> None:
        """LLM call `call` is starting: its deltas become the partial answer."""
        self.partial = PartialAnswer(call)

    def grant(self, target: StreamTarget) -> StreamTarget:
        """`target` with the call's publish token and what it may still stream (bytes)."""
        if self._secret is None and workflow.patched(PATCH_PUBLISH_TOKEN):
            self._secret = f"{workflow.random().getrandbits(128):032x}"
        if self.partial is not None and self.partial.call == target.call:
            self.partial.streamed = True
        left = max(0, MAX_STREAMED_BYTES_PER_RUN - self.streamed_bytes)
        token = self._token(target.call) or ""
        return target.model_copy(update={"token": token, "max_bytes": min(MAX_STREAMED_BYTES_PER_CALL, left)})

    def _token(self, call: int) -> str | None:
        return f"{self._secret}.{call}" if self._secret is not None else None

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

    def drop(self) -> None:
        """Count one publish (or one item of it) dropped."""
        self.dropped += 1

    def accept(self, publish: PublishInput) -> None:
        """Keep the in-flight call's own deltas; drop (and count) everything else.

        Only the call's activity knows its token (the run hands it in the request; each attempt
        publishes as `<token>/<attempt>`), so a client cannot publish deltas or trace events.
        An interrupted call's activity hears of its cancel only at its next heartbeat and may
        publish until then: those batches are dropped, so subscribers never see them.
        """
        partial = self.partial
        token = self._token(partial.call) if partial is not None else None
        if partial is None or (token is not None and publish.publisher_id.partition("/")[0] != token):
            self.drop()
            return
        deltas: list[DeltaEvent] = []
        kept: list[PublishEntry] = []
        room = MAX_STREAMED_BYTES_PER_RUN - self.streamed_bytes
        for entry in publish.items:
            delta = delta_of(entry)
            size = streamed_bytes(delta) if delta is not None else 0
            if delta is None or delta.call != partial.call or size > room:
                self.drop()
                continue
            room -= size
            deltas.append(delta)
            kept.append(entry)
        if not kept:
            return
        before = self._on_offset()
        self._on_publish(replace(publish, items=kept))
        if self._on_offset() > before:  # not a duplicate batch
            for delta in deltas:
                self.streamed_bytes += streamed_bytes(delta)
                partial.add(delta)
                live_sink.emit(delta)
