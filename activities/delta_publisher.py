"""An LLM call's deltas, published to its run's stream in batches (see `contracts.stream`).

The call's route hands each fragment of the answer (text, thinking, tool-call pieces)
to a `DeltaSink`; `DeltaPublisher.add` is the one sink the LLM activity uses. The
publisher gathers fragments and sends them as `DeltaEvent`s to the activity's own
workflow through `WorkflowStreamClient.from_within_activity` (one signal per batch):
the first fragment at once (time to first token), then at most one batch per
`StreamTarget.interval_s` holding everything gathered since, and a last batch when
the call ends (also when it fails: the deltas of a failed attempt carry its number,
so a client discards them once a later attempt's arrive). A batch that reaches
`MAX_BATCH_CHARS` goes out without waiting for the interval, so no signal grows
without bound however fast the model writes; after every `BATCHES_PER_INTERVAL_STEP`
batches of one call the interval doubles, so no call's stream crowds the run's history.

Publishing never fails the call: a publisher that cannot reach the workflow (it has
ended, or the activity has none) logs once and drops the rest. A cancelled call stops
publishing at once and sends nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from temporalio.contrib.workflow_streams import TopicHandle, WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from contracts.llm import StreamTarget
from contracts.stream import EVENTS_TOPIC, DeltaEvent, ToolCallDelta

MAX_BATCH_CHARS = 32_000
"""A batch holding this many characters is sent without waiting out the interval."""
BATCHES_PER_INTERVAL_STEP = 200
"""After this many batches of one call the interval doubles (and again after as many more, up to
`MAX_INTERVAL_S`), so a very long answer adds history logarithmically, not linearly, in its length."""
MAX_INTERVAL_S = 5.0
FINAL_FLUSH_TIMEOUT_S = 10.0
"""The longest a call's result waits for its last batch to be delivered (then it is dropped)."""

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class Fragment:
    """What one streamed chunk of an answer adds: text, thinking, and pieces of tool calls."""

    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCallDelta] = field(default_factory=list[ToolCallDelta])


DeltaSink = Callable[[Fragment], None]
"""Receives each fragment of an answer as it streams in; must not raise or block."""


@dataclass(slots=True)
class _ToolCallPiece:
    index: int
    id: str | None
    name: str | None
    arguments: list[str]


class _Batch:
    """Fragments gathered since the last batch went out; consecutive pieces of one tool call merge."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.tool_calls: list[_ToolCallPiece] = []
        self.chars = 0

    def add(self, fragment: Fragment) -> None:
        if fragment.text:
            self.text.append(fragment.text)
        if fragment.thinking:
            self.thinking.append(fragment.thinking)
        self.chars += len(fragment.text) + len(fragment.thinking)
        for delta in fragment.tool_calls:
            self.chars += len(delta.arguments)
            last = self.tool_calls[-1] if self.tool_calls else None
            if (
                last is not None
                and last.index == delta.index
                and delta.id in (None, last.id)
                and delta.name in (None, last.name)
            ):
                last.arguments.append(delta.arguments)
            else:
                self.tool_calls.append(_ToolCallPiece(delta.index, delta.id, delta.name, [delta.arguments]))

    def empty(self) -> bool:
        return not (self.text or self.thinking or self.tool_calls)

    def event(self, call: int, attempt: int, seq: int) -> DeltaEvent:
        return DeltaEvent(
            call=call,
            attempt=attempt,
            seq=seq,
            text="".join(self.text),
            thinking="".join(self.thinking),
            tool_calls=[
                ToolCallDelta(index=p.index, id=p.id, name=p.name, arguments="".join(p.arguments))
                for p in self.tool_calls
            ],
        )


class DeltaPublisher:
    """Publishes one LLM call's fragments as `DeltaEvent`s; use `async with` around the call."""

    def __init__(self, target: StreamTarget, attempt: int, stream: WorkflowStreamClient | None) -> None:
        """Publish call `target.call`'s fragments of attempt `attempt` through `stream` (None: drop them)."""
        self._call = target.call
        self._interval_s = target.interval_s
        self._attempt = attempt
        self._stream = stream
        self._topic: TopicHandle[DeltaEvent] | None = (
            stream.topic(EVENTS_TOPIC, type=DeltaEvent) if stream is not None else None
        )
        self._batch = _Batch()
        self._full: list[_Batch] = []  # batches that reached MAX_BATCH_CHARS, oldest first
        self._wake = asyncio.Event()  # something to send, or closing
        self._hurry = asyncio.Event()  # send without waiting out the interval
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        """Batches delivered so far (each one signal in the run's history)."""

    @classmethod
    def for_activity(cls, target: StreamTarget, attempt: int) -> DeltaPublisher:
        """A publisher to the running activity's workflow (one that drops everything when there is none)."""
        try:
            stream = WorkflowStreamClient.from_within_activity()
        except Exception:  # no workflow or no client: the call still answers, unstreamed
            _log.warning("LLM call %d: cannot stream deltas from this activity", target.call, exc_info=True)
            stream = None
        return cls(target, attempt, stream)

    def add(self, fragment: Fragment) -> None:
        """The sink: gather `fragment` for the next batch."""
        if self._topic is None:
            return
        self._batch.add(fragment)
        self._wake.set()
        if self._batch.chars >= MAX_BATCH_CHARS:
            self._full.append(self._batch)
            self._batch = _Batch()
            self._hurry.set()

    async def __aenter__(self) -> DeltaPublisher:
        if self._topic is not None:
            self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            task.cancel()  # the call was cancelled: nothing more goes out
        else:
            self._closing = True
            self._wake.set()
            self._hurry.set()
            done, _ = await asyncio.wait({task}, timeout=FINAL_FLUSH_TIMEOUT_S)
            if not done:
                _log.warning("LLM call %d: the last batch of deltas was not delivered in time", self._call)
                task.cancel()
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            _log.warning("LLM call %d: delta publishing failed", self._call, exc_info=task.exception())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            started = loop.time()
            due = [*self._full, self._batch]
            self._full, self._batch = [], _Batch()
            for batch in due:
                if not batch.empty() and not await self._send(batch):
                    return
            if self._closing and self._batch.empty() and not self._full:
                return
            if not self._closing and not self._full:
                self._hurry.clear()
            try:
                await asyncio.wait_for(self._hurry.wait(), max(0.0, started + self._interval() - loop.time()))
            except TimeoutError:
                pass

    def _interval(self) -> float:
        """The wait between batches: `interval_s`, doubled after every `BATCHES_PER_INTERVAL_STEP` batches."""
        steps = self.batches // BATCHES_PER_INTERVAL_STEP
        return min(max(self._interval_s, MAX_INTERVAL_S), self._interval_s * 2 ** min(steps, 16))

    async def _send(self, batch: _Batch) -> bool:
        """Send one batch; False (and nothing more is sent) when it could not be delivered."""
        assert self._topic is not None and self._stream is not None
        try:
            self._topic.publish(batch.event(self._call, self._attempt, self.batches))
            await self._stream.flush()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                return self._give_up(error)
            # The run has ended (e.g. it interrupted this call and finished before its cancel
            # reached this activity): nobody is listening, so there is nothing to warn about.
            _log.info("LLM call %d: its run has ended; not publishing the rest", self._call)
            self._topic = None
            return False
        except Exception as error:  # the server refused: the call goes on unstreamed
            return self._give_up(error)
        self.batches += 1
        return True

    def _give_up(self, error: Exception) -> bool:
        """Log why publishing stopped (nothing more is sent) and say so."""
        _log.warning(
            "LLM call %d (attempt %d): deltas could not be published; dropping the rest",
            self._call,
            self._attempt,
            exc_info=error,
        )
        self._topic = None
        return False
