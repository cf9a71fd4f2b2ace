"""Following a run on the live channel (`REACT_LIVE_URL`), with the durable truth as the fallback.

`clients.stream.run_events` uses it when the client's environment names a live channel
(`live.channel`). The channel holds the run's trace items (the worker writes them as the run
records them: `hosting.live_sink`) and its LLM calls' delta batches (the LLM activity writes
them: `activities.delta_publisher`), in one order; reading it costs the run nothing (no Update,
no query, no history). Offsets are the channel's entry ids. Items a worker may have written twice (a workflow
task that ran again) are dropped: trace items by seq, deltas by (call, attempt, seq). Missed
trace items (a worker that died before it wrote them) are read back from the `trace` query when
a later one shows the gap, or at the end. When nothing comes for `IDLE_CHECK_S`, the run's
status is checked (`describe`, no history): a run that has closed ends the follow even if its
last items never reached the channel. A run the channel has nothing of (its worker writes to
no channel), or a channel that fails (Redis down), is followed on its Workflow Stream instead
(`fallback`), without what was yielded already.
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
from live.channel import START, LiveChannel, live_url, open_channel

IDLE_CHECK_S = 1.0
"""How long a read waits for an item before checking the run's status."""
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


def client_channel() -> LiveChannel | None:
    """The live channel this process's environment names, one per event loop (None: none)."""
    url = live_url()
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


async def _from_channel(
    client: Client,
    workflow_id: str,
    channel: LiveChannel,
    gaps: TraceGaps,
    deltas: set[tuple[int, int, int]],
) -> AsyncIterator[DeltaEvent | TraceItem | None]:
    """Events from the channel until the run has ended; None: the channel has nothing of this run."""
    handle = client.get_workflow_handle(workflow_id)
    offset, any_item = START, False
    while not gaps.ended:
        items = await channel.read(workflow_id, offset, IDLE_CHECK_S)
        if items:
            offset, any_item = items[-1][0], True
        for _, data in items:
            try:
                event = EVENTS.validate_json(data)
            except ValidationError:
                continue
            if isinstance(event, DeltaEvent):
                key = (event.call, event.attempt, event.seq)
                if key not in deltas:
                    deltas.add(key)
                    yield event
                continue
            for missed in await gaps.before(event):
                yield missed
            if event.event.seq > gaps.last_seq:
                yield gaps.seen(event)
        if items or gaps.ended:
            continue
        described = await handle.describe()
        if not any_item and not await channel.exists(workflow_id) and described.history_length > 3:
            # The run's first workflow task is done and wrote nothing here: its worker has no channel.
            yield None
            return
        if described.status != WorkflowExecutionStatus.RUNNING:
            return
