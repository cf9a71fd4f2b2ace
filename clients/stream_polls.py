"""A run's entries on its Workflow Stream: the source `clients.run_follow.RunFollower` falls back to.

`StreamEntries` reads them two ways: long-polling Updates, then queries. Each poll Update is
history and one of the run's 2,000 Updates, so a run answers only
`AgentConfig.stream_poll_updates` of them and refuses the rest (`poll_budget_spent`); from
then on a follower polls by the library's poll query, which adds no history (it costs a
worker round trip per poll instead of a long wait).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from temporalio.api.common.v1 import Payload
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import POLL_BUDGET_SPENT
from contracts.stream import EVENTS_TOPIC, POLL_NAME

__all__ = [
    "DEFAULT_POLL_COOLDOWN_S",
    "MAX_POLL_RETRIES",
    "RETRIED_POLL_STATUSES",
    "StreamEntries",
    "may_read_again",
    "query_polls",
    "read_again",
    "update_polls",
]

DEFAULT_POLL_COOLDOWN_S = 0.1
"""Least time between two stream polls once caught up (each poll is an Update in the run's history)."""
MAX_POLL_RETRIES = 10
"""Polls in a row that failed, and may be made again, before giving up (`RETRIED_POLL_STATUSES`)."""
RETRIED_POLL_STATUSES = frozenset(
    {RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED}
)
"""A poll refused because a workflow task failed, or one the server did not answer in time (a
loaded worker replaying the run): polls only read, so each is made again from the same offset."""
QUERY_POLLS_PER_STATUS_CHECK = 20
"""Empty query polls between two checks that the run still runs (a terminated run has no last event)."""
Read = TypeVar("Read")


def may_read_again(error: RPCError | RPCTimeoutOrCancelledError) -> bool:
    """Whether a read of a run that failed with `error` is made again (`RETRIED_POLL_STATUSES`).

    A workflow task that failed (e.g. a late signal as the run completes) aborts the Updates in
    flight, the library's poll among them; a worker replaying the run on a loaded machine may
    answer a poll or a query too late. Reads change nothing, so each may be made again.
    """
    return isinstance(error, RPCTimeoutOrCancelledError) or error.status in RETRIED_POLL_STATUSES


def read_again(read: Callable[[], Awaitable[Read]], cooldown_s: float) -> Callable[[], Awaitable[Read]]:
    """`read`, made again (`may_read_again`) up to `MAX_POLL_RETRIES` times in a row."""

    async def again() -> Read:
        retries = 0
        while True:
            try:
                return await read()
            except (RPCError, RPCTimeoutOrCancelledError) as error:
                retries += 1
                if not may_read_again(error) or retries > MAX_POLL_RETRIES:
                    raise
                await asyncio.sleep(cooldown_s * retries)

    return again


class StreamEntries:
    """Run `workflow_id`'s entries on its Workflow Stream (an `EntrySource`): polls by Update, then by query.

    A poll refused because a workflow task of the run failed (`FAILED_PRECONDITION`, e.g. a
    late signal arriving as the run completes), or not answered in time (a loaded worker), is
    made again from the same offset, up to `MAX_POLL_RETRIES` times in a row.
    """

    interleaved = False

    def __init__(self, client: Client, workflow_id: str, poll_cooldown_s: float) -> None:
        self._client = client
        self._workflow_id = workflow_id
        self._poll_cooldown_s = poll_cooldown_s

    def undecodable(self, key: str, reason: str) -> None:
        """Skipped silently: a newer worker's kind."""

    async def entries(self, ended: Callable[[], bool]) -> AsyncIterator[tuple[str, bytes]]:
        """(offset, JSON) of each item until `ended()` or the run has closed.

        Raises:
            RPCError: e.g. `NOT_FOUND` when no run has this workflow id.
        """
        stream = WorkflowStreamClient.create(self._client, self._workflow_id)
        cooldown = timedelta(seconds=self._poll_cooldown_s)
        offset, retries, by_query = 0, 0, False
        while True:
            items = (
                query_polls(self._client, self._workflow_id, offset, ended, self._poll_cooldown_s)
                if by_query
                else update_polls(stream, offset, cooldown)
            )
            try:
                async for item_offset, data in items:
                    offset, retries = item_offset + 1, 0
                    yield str(item_offset), data
                return
            except WorkflowUpdateFailedError as error:
                if getattr(error.cause, "type", None) != POLL_BUDGET_SPENT:
                    raise
                by_query = True  # the run keeps its Updates for controls: poll by query (no history)
            except (RPCError, RPCTimeoutOrCancelledError) as error:
                retries += 1  # poll again from the same offset
                if not may_read_again(error) or retries > MAX_POLL_RETRIES:
                    raise
                await asyncio.sleep(self._poll_cooldown_s * retries)


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
