"""A run's entries on the live channel: the first source `clients.run_follow.RunFollower` reads.

`clients.stream.run_events` reads it when the client's deployment has a live channel
(`REACT_LIVE_URL`, else the dev server's: `live.dev_channel`). The channel holds the run's
trace items (the worker writes them as the run records them: `hosting.live_sink`) and its LLM
calls' delta batches (the LLM activity writes them: `activities.llm.delta_publisher`), in one
order; reading it costs the run nothing (no Update, no query, no history). Two writers share
the entry, so it is `interleaved` (the follower holds a call's deltas until its start). When
nothing comes for `IDLE_CHECK_S`, the run's status is checked (`describe`, no history): a run
that has closed ends the read even if its last items never reached the channel (the follower
reads them back from the trace). A run the channel has nothing of for `NO_CHANNEL_AFTER_S`
after its first workflow task, or at its close (its worker writes to no channel), or a channel
that fails (Redis down), is `SourceLost`: the follower goes on with the run's Workflow Stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

from redis.exceptions import RedisError
from temporalio.client import Client, WorkflowExecutionStatus

from clients.run_follow import SourceLost
from live.channel import START, LiveChannel, open_channel
from live.dev_channel import channel_url

__all__ = ["IDLE_CHECK_S", "NO_CHANNEL_AFTER_S", "ChannelEntries", "client_channel"]

IDLE_CHECK_S = 1.0
"""How long a read waits for an item before checking the run's status."""
NO_CHANNEL_AFTER_S = 5.0
"""How long a run that has started must show nothing on the channel before it is taken for one whose
worker writes to none (a worker under load may write its first items a second or more late, and a
run of a channel worker followed on its stream would show no text until each call ends)."""
_channels: dict[tuple[int, str], LiveChannel] = {}
_log = logging.getLogger(__name__)


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


class ChannelEntries:
    """Run `workflow_id`'s entries on `channel` (an `EntrySource`; see the module docstring)."""

    interleaved = True

    def __init__(self, client: Client, workflow_id: str, channel: LiveChannel) -> None:
        self._client = client
        self._workflow_id = workflow_id
        self._channel = channel

    def undecodable(self, key: str, reason: str) -> None:
        """Counted in the channel's skipped entries."""
        self._channel.skipped.skip(self._workflow_id, key, reason)

    async def entries(self, ended: Callable[[], bool]) -> AsyncIterator[tuple[str, bytes]]:
        """(entry id, JSON) of each entry until `ended()` or the run has closed.

        Raises:
            SourceLost: the channel failed, or has nothing of this run.
        """
        try:
            async for entry in self._read(ended):
                yield entry
        except (OSError, RedisError) as error:
            _log.warning("live channel: following %s on its stream instead (%s)", self._workflow_id, error)
            raise SourceLost(f"live channel failed: {error}") from error

    async def _read(self, ended: Callable[[], bool]) -> AsyncIterator[tuple[str, bytes]]:
        handle = self._client.get_workflow_handle(self._workflow_id)
        offset, any_item = START, False
        loop = asyncio.get_running_loop()
        first_task_done_at: float | None = None  # when the run's first workflow task was seen done
        while not ended():
            items = await self._channel.read(self._workflow_id, offset, IDLE_CHECK_S)
            if items:
                offset, any_item = items[-1][0], True
            for entry_id, data in items:
                if data:  # an entry without data: the channel counted it
                    yield entry_id, data
            if items or ended():
                continue
            described = await handle.describe()
            running = described.status == WorkflowExecutionStatus.RUNNING
            if first_task_done_at is None and described.history_length > 3:
                first_task_done_at = loop.time()
            if (
                not any_item
                and first_task_done_at is not None
                and (loop.time() - first_task_done_at >= NO_CHANNEL_AFTER_S or not running)
                and not await self._channel.exists(self._workflow_id)
            ):
                # The run's first workflow task is long done (or the run has closed) and wrote
                # nothing here: its worker has no channel. Counted from that task, not from the
                # follow's start: a worker that starts late (a queue nobody polled yet) writes
                # its first items late too.
                raise SourceLost("the live channel has nothing of this run")
            if not running:  # what the channel has not got yet comes from the run's trace
                return
