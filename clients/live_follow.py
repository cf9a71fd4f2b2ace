"""Following a run on the live channel, with the durable truth as the fallback.

`clients.stream.run_events` uses it when the client's deployment has a live channel
(`REACT_LIVE_URL`, else the dev server's: `live.dev_channel`). The channel holds the run's
trace items (the worker writes them as the run records them: `hosting.live_sink`) and its LLM
calls' delta batches (the LLM activity writes them: `activities.llm.delta_publisher`), in one
order; reading it costs the run nothing (no Update, no query, no history). Offsets are the
channel's entry ids. Items a worker may have written twice (a workflow
task that ran again) are dropped: trace items by seq, deltas by (call, attempt, seq). A call's
deltas are held until its `llm_started` has been yielded (`_DeltasAfterStart`: the two writers'
items can land out of order when the worker is busy). Missed
trace items (a worker that died before it wrote them) are read back from the `trace` query when
a later one shows the gap, or at the end. When nothing comes for `IDLE_CHECK_S`, the run's
status is checked (`describe`, no history): a run that has closed ends the follow even if its
last items never reached the channel. A run the channel has nothing of for `NO_CHANNEL_AFTER_S`
after its first workflow task, or at its close (its worker writes to no channel), or a channel
that fails (Redis down), is followed on its Workflow Stream instead (`fallback`), without what
was yielded already.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from pydantic import TypeAdapter, ValidationError
from redis.exceptions import RedisError
from temporalio.client import Client, WorkflowExecutionStatus

from contracts.stream import DeltaEvent, StreamEvent, TraceItem
from live.channel import START, LiveChannel, open_channel
from live.dev_channel import channel_url

IDLE_CHECK_S = 1.0
"""How long a read waits for an item before checking the run's status."""
NO_CHANNEL_AFTER_S = 5.0
"""How long a run that has started must show nothing on the channel before it is taken for one whose
worker writes to none (a worker under load may write its first items a second or more late, and a
run of a channel worker followed on its stream would show no text until each call ends)."""
EVENTS: TypeAdapter[DeltaEvent | TraceItem] = TypeAdapter(StreamEvent)
_channels: dict[tuple[int, str], LiveChannel] = {}
_log = logging.getLogger(__name__)


class TraceGaps(Protocol):
    """The trace bookkeeping `clients.stream` keeps (`_TraceGaps`)."""

    ended: bool
    last_seq: int

    async def before(self, item: TraceItem | None) -> list[TraceItem]:
        """Missed trace events before `item` (None: the end)."""
        ...

    def seen(self, item: TraceItem) -> TraceItem:
        """Note `item` as yielded."""
        ...


def client_channel(client: Client) -> LiveChannel | None:
    """The live channel of `client`'s deployment, one per event loop (None: none).

    `REACT_LIVE_URL`, else the channel recorded beside the dev server `client` talks to
    (`live.dev_channel`).
    """
    url = channel_url(client.service_client.config.target_host)
    if url is None:
        return None
    key = (id(asyncio.get_running_loop()), url)
    if key not in _channels:
        _channels[key] = open_channel(url)
    return _channels[key]


async def channel_events(
    client: Client,
    workflow_id: str,
    channel: LiveChannel,
    gaps: TraceGaps,
    fallback: Callable[[], AsyncIterator[DeltaEvent | TraceItem]],
) -> AsyncIterator[DeltaEvent | TraceItem]:
    """The run's events from the channel until it has ended (see the module docstring).

    A channel that fails (Redis down) is given up for the run's stream (`fallback`), dropping
    the deltas already yielded (trace events are dropped by `gaps`).
    """
    deltas: set[tuple[int, int, int]] = set()
    fall_back = False
    try:
        async for event in _from_channel(client, workflow_id, channel, gaps, deltas):
            if event is None:
                fall_back = True
                break
            yield event
    except (OSError, RedisError) as error:
        _log.warning("live channel: following %s on its stream instead (%s)", workflow_id, error)
        fall_back = True
    if fall_back:
        async for event in fallback():
            if isinstance(event, DeltaEvent) and (event.call, event.attempt, event.seq) in deltas:
                continue
            yield event
        return
    for missed in await gaps.before(None):
        yield missed


class _DeltasAfterStart:
    """Holds an LLM call's deltas until its `llm_started` trace event has been yielded.

    Two writers share a run's entry: the worker writes trace items in the background, the LLM
    activity its deltas at once, so under load a call's first deltas can land before the trace
    items that precede them (`llm_started`, even `request_started`, which clears a follower's
    text). Deltas of a call whose start was never seen are dropped at the end (its text is in the
    thread).
    """

    def __init__(self) -> None:
        self._started: set[int] = set()
        self._held: list[DeltaEvent] = []

    def delta(self, delta: DeltaEvent) -> list[DeltaEvent]:
        """`delta` if its call has started, else nothing (held)."""
        if delta.call in self._started:
            return [delta]
        self._held.append(delta)
        return []

    def trace(self, item: TraceItem) -> list[DeltaEvent]:
        """The deltas held for the call `item` starts (none for any other trace event)."""
        call = item.event.data.get("call")
        if item.event.kind != "llm_started" or not isinstance(call, int):
            return []
        self._started.add(call)
        ready = [d for d in self._held if d.call == call]
        self._held = [d for d in self._held if d.call != call]
        return ready


async def _from_channel(
    client: Client,
    workflow_id: str,
    channel: LiveChannel,
    gaps: TraceGaps,
    deltas: set[tuple[int, int, int]],
) -> AsyncIterator[DeltaEvent | TraceItem | None]:
    """Events from the channel until the run has ended; None: the channel has nothing of this run."""
    handle = client.get_workflow_handle(workflow_id)
    offset, any_item, order = START, False, _DeltasAfterStart()
    loop = asyncio.get_running_loop()
    first_task_done_at: float | None = None  # when the run's first workflow task was seen done
    while not gaps.ended:
        items = await channel.read(workflow_id, offset, IDLE_CHECK_S)
        if items:
            offset, any_item = items[-1][0], True
        for entry_id, data in items:
            if not data:
                continue  # an entry without data: the channel counted it
            try:
                event = EVENTS.validate_json(data)
            except ValidationError as error:
                channel.skipped.skip(
                    workflow_id, entry_id, f"not a stream event: {error.error_count()} errors"
                )
                continue
            if isinstance(event, DeltaEvent):
                key = (event.call, event.attempt, event.seq)
                if key not in deltas:
                    deltas.add(key)
                    for ready in order.delta(event):
                        yield ready
                continue
            traces = [*await gaps.before(event)]
            if event.event.seq > gaps.last_seq:
                traces.append(gaps.seen(event))
            for trace in traces:
                yield trace
                for ready in order.trace(trace):
                    yield ready
        if items or gaps.ended:
            continue
        described = await handle.describe()
        running = described.status == WorkflowExecutionStatus.RUNNING
        if first_task_done_at is None and described.history_length > 3:
            first_task_done_at = loop.time()
        if (
            not any_item
            and first_task_done_at is not None
            and (loop.time() - first_task_done_at >= NO_CHANNEL_AFTER_S or not running)
            and not await channel.exists(workflow_id)
        ):
            # The run's first workflow task is long done (or the run has closed) and wrote nothing
            # here: its worker has no channel. Counted from that task, not from the follow's start:
            # a worker that starts late (a queue nobody polled yet) writes its first items late too.
            yield None
            return
        if not running:  # what the channel has not got yet comes from the run's trace
            for trace in await gaps.before(None):
                yield trace
                for ready in order.trace(trace):
                    yield ready
            return
