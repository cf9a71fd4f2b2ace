"""The two ways `clients.stream.run_events` reads a run's stream: long-polling Updates, then queries.

Each poll Update is history and one of the run's 2,000 Updates, so a run answers only
`AgentConfig.stream_poll_updates` of them and refuses the rest (`poll_budget_spent`); from
then on a follower polls by the library's poll query, which adds no history (it costs a
worker round trip per poll instead of a long wait).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient

from contracts.stream import EVENTS_TOPIC, POLL_NAME

QUERY_POLLS_PER_STATUS_CHECK = 20
"""Empty query polls between two checks that the run still runs (a terminated run has no last event)."""


async def update_polls(
    stream: WorkflowStreamClient, offset: int, cooldown: timedelta
) -> AsyncIterator[tuple[int, bytes]]:
    """(offset, JSON) of each item from `offset` on, by the library's long-polling Updates."""
    async for item in stream.subscribe(EVENTS_TOPIC, offset, result_type=RawValue, poll_cooldown=cooldown):
        yield item.offset, item.data.payload.data


async def query_polls(
    client: Client, workflow_id: str, offset: int, ended: Callable[[], bool], cooldown_s: float
) -> AsyncIterator[tuple[int, bytes]]:
    """The same by the poll query (no history), until the run's last trace event or its close."""
    handle = client.get_workflow_handle(workflow_id)
    idle = 0
    while True:
        result = await handle.query(
            POLL_NAME, PollInput(topics=[EVENTS_TOPIC], from_offset=offset), result_type=PollResult
        )
        for wire in result.items:
            payload = Payload.FromString(base64.b64decode(wire.data))
            yield wire.offset, payload.data
        offset = result.next_offset
        if result.more_ready:
            continue
        if ended():
            return
        idle += 1
        if (
            idle % QUERY_POLLS_PER_STATUS_CHECK == 0
            and (await handle.describe()).status != WorkflowExecutionStatus.RUNNING
        ):
            return
        await asyncio.sleep(cooldown_s)
