"""An LLM call's deltas, published to its run's stream in batches (see `contracts.stream`).

The call's route hands each fragment of the answer (text, thinking, tool-call pieces)
to a `DeltaSink`; `DeltaPublisher.add` is the one sink the LLM activity uses. The
publisher gathers fragments and sends them as `DeltaEvent`s, one batch at a time:

- when the worker has a live channel (`REACT_LIVE_URL`), to the run's entry in it
  (`LiveChannel.publish_delta`): no signal and no history per batch. A batch the channel
  refuses (an interrupting steer has cut the call) ends the publishing; a channel that
  fails sends that batch and the rest by signal instead (followers fall back to the run's
  stream, and drop what they already have by call, attempt and seq);
- otherwise to the activity's own workflow as the Workflow Stream library's publish
  signal (one signal per batch), from the call's own token (`StreamTarget.token`: the run
  drops publishes from anyone else).

The schedule: the first fragment at once, then a batch per interval, the interval growing
from `StreamTarget.interval_s` by `INTERVAL_GROWTH` a batch up to `STEADY_INTERVAL_S`, and,
after `BATCHES_PER_INTERVAL_STEP` more, doubling up to `MAX_INTERVAL_S`; a last batch when
the call ends (also when it fails: a failed attempt's deltas carry its number, so a client
drops them once a later attempt's arrive). A batch of `MAX_BATCH_CHARS` goes out at once.
A call streams at most `StreamTarget.max_bytes` (UTF-8 bytes of text, thinking and
arguments): past it the rest of the answer arrives only whole, with the call's result.

Publishing never fails the call: a publisher that cannot reach the workflow logs once and
drops the rest. A cancelled call stops publishing at once.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput
from temporalio.converter import PayloadConverter
from temporalio.service import RPCError, RPCStatusCode

from activities.worker_metrics import FIRST_TOKEN
from contracts.llm import StreamTarget
from contracts.stream import EVENTS_TOPIC, PUBLISH_SIGNAL, DeltaEvent, ToolCallDelta
from live.calls import LiveDelta
from live.channel import LiveChannel

MAX_BATCH_CHARS = 32_000
"""A batch holding this many characters is sent without waiting out the interval."""
INTERVAL_GROWTH = 1.25
"""Each batch's interval is this much longer than the one before, up to `STEADY_INTERVAL_S`."""
STEADY_INTERVAL_S = 0.4
"""The interval a long answer settles at (unless `interval_s` is longer): with the time a batch takes to
reach a follower, text moves at least twice a second (`bench.stream_cost`)."""
BATCHES_PER_INTERVAL_STEP = 240
"""After this many batches at the steady interval (two minutes) the interval doubles, and again after as
many more, up to `MAX_INTERVAL_S`: a very long answer adds history events logarithmically in its length."""
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

    def __init__(
        self,
        target: StreamTarget,
        attempt: int,
        workflow: WorkflowHandle[Any, Any] | None,
        converter: PayloadConverter | None = None,
        channel: LiveChannel | None = None,
    ) -> None:
        """Publish call `target.call`'s fragments of attempt `attempt` to `workflow` (None: drop them).

        With `channel`, batches go to the workflow's entry in the live channel, and to
        `workflow` by signal only once the channel has failed.
        """
        self._call = target.call
        self._channel = channel if workflow is not None else None
        self._interval_s = target.interval_s
        self._attempt = attempt
        self._workflow = workflow
        self._converter = converter or PayloadConverter.default
        # One publisher per attempt: the stream drops a batch whose sequence it has seen from the same id.
        self._publisher_id = f"{target.token or uuid.uuid4().hex[:16]}/{attempt}"
        self._sequence = 0
        self._bytes_left = target.max_bytes if target.max_bytes is not None else math.inf
        self.cut = False
        """Whether the call streamed past `max_bytes` (the rest was not published)."""
        self._batch = _Batch()
        self._full: list[_Batch] = []  # batches that reached MAX_BATCH_CHARS, oldest first
        self._wake = asyncio.Event()  # something to send, or closing
        self._hurry = asyncio.Event()  # send without waiting out the interval
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._opened_at: float | None = time.monotonic()  # None once the first piece is measured
        self.batches = 0
        """Batches delivered so far (each a signal in the run's history, or an item in the live channel)."""

    @classmethod
    def for_activity(
        cls, target: StreamTarget, attempt: int, channel: LiveChannel | None = None
    ) -> DeltaPublisher:
        """A publisher to the running activity's workflow (one that drops everything when there is none).

        With the worker's live `channel`, batches go there first (see the module docstring).
        """
        try:
            workflow_id = activity.info().workflow_id
            if workflow_id is None:
                raise RuntimeError("the activity was not scheduled by a workflow")
            client = activity.client()
            handle = client.get_workflow_handle(workflow_id)
            return cls(target, attempt, handle, client.data_converter.payload_converter, channel)
        except Exception:  # no workflow or no client: the call still answers, unstreamed
            _log.warning("LLM call %d: cannot stream deltas from this activity", target.call, exc_info=True)
            return cls(target, attempt, None)

    def add(self, fragment: Fragment) -> None:
        """The sink: gather `fragment` for the next batch (what fits in the call's byte budget)."""
        if self._workflow is None or self.cut:
            return
        fragment = self._fit(fragment)
        if not (fragment.text or fragment.thinking or fragment.tool_calls):
            return
        if self._opened_at is not None:
            FIRST_TOKEN.observe(time.monotonic() - self._opened_at)
            self._opened_at = None
        self._batch.add(fragment)
        self._wake.set()
        if self._batch.chars >= MAX_BATCH_CHARS:
            self._full.append(self._batch)
            self._batch = _Batch()
            self._hurry.set()

    def _fit(self, fragment: Fragment) -> Fragment:
        """`fragment` cut to the bytes left of the budget (`cut` is set once it is spent)."""
        size = _size(fragment.text) + _size(fragment.thinking)
        for delta in fragment.tool_calls:
            size += _size(delta.arguments)
        if size <= self._bytes_left:
            self._bytes_left -= size
            return fragment
        self.cut = True
        room = int(self._bytes_left)
        self._bytes_left = 0
        text = _cut(fragment.text, room)
        return Fragment(text=text, thinking=_cut(fragment.thinking, room - _size(text)))

    async def __aenter__(self) -> DeltaPublisher:
        if self._workflow is not None:
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
        """The wait after the latest batch (see the module docstring for the schedule)."""
        return interval_after(self.batches, self._interval_s)

    async def _send(self, batch: _Batch) -> bool:
        """Send one batch; False (and nothing more is sent) when it could not be delivered."""
        assert self._workflow is not None
        event = batch.event(self._call, self._attempt, self.batches)
        if self._channel is not None:
            try:
                delivered = await self._channel.publish_delta(
                    self._workflow.id,
                    LiveDelta(self._call, self._attempt, event.model_dump_json().encode(), event.text),
                )
            except Exception as error:  # the channel is down: the run's stream carries the rest
                message = "LLM call %d: the live channel failed (%s); publishing by signal instead"
                _log.warning(message, self._call, error)
                self._channel = None
            else:
                if not delivered:
                    # An interrupting steer cut the call: what followers saw is what the run records.
                    _log.info("LLM call %d: cut by its run; not publishing the rest", self._call)
                    self._workflow = None
                    return False
                self.batches += 1
                return True
        try:
            payload = self._converter.to_payloads([event])[0]
            data = base64.b64encode(payload.SerializeToString()).decode("ascii")
            self._sequence += 1
            publish = PublishInput(
                items=[PublishEntry(topic=EVENTS_TOPIC, data=data)],
                publisher_id=self._publisher_id,
                sequence=self._sequence,
            )
            await self._workflow.signal(PUBLISH_SIGNAL, publish)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                return self._give_up(error)
            # The run has ended (e.g. it interrupted this call and finished before its cancel
            # reached this activity): nobody is listening, so there is nothing to warn about.
            _log.info("LLM call %d: its run has ended; not publishing the rest", self._call)
            self._workflow = None
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
        self._workflow = None
        return False


def interval_after(batches: int, interval_s: float) -> float:
    """The wait after `batches` batches of a call: growing from `interval_s` to the steady interval."""
    steady = max(interval_s, STEADY_INTERVAL_S)
    growing = math.ceil(math.log(steady / interval_s, INTERVAL_GROWTH)) if steady > interval_s else 0
    if batches <= growing:
        return min(steady, interval_s * INTERVAL_GROWTH ** max(0, batches - 1))
    steps = (batches - growing) // BATCHES_PER_INTERVAL_STEP
    return min(max(steady, MAX_INTERVAL_S), steady * 2 ** min(steps, 16))


def _size(text: str) -> int:
    """UTF-8 bytes of `text` (ASCII text, most of any answer, without encoding it: once per chunk)."""
    return len(text) if text.isascii() else len(text.encode())


def _cut(text: str, room: int) -> str:
    """The longest start of `text` that is at most `room` UTF-8 bytes."""
    return text.encode()[: max(0, room)].decode(errors="ignore")
