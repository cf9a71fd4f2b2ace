"""A session's usage rows still to write: each ended request's `UsageRecord`, written aside.

A row is written by the `record_usage` activity while the session goes on (the next request
starts at once). Continuing as new never waits for a row: the rows not yet written are carried
(`SessionCarry.unwritten_usage`, at most `MAX_UNWRITTEN_USAGE`) and written again by the next
run; the store keys a row by session and request id, so a row written twice is one row.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError

from contracts.activities import RECORD_USAGE
from contracts.session import MAX_UNWRITTEN_USAGE
from contracts.usage import UsageRecord
from workflows.activity_calls import call_activity


class UsageRows:
    """The usage rows being written (the only writer)."""

    def __init__(self, carried: list[UsageRecord]) -> None:
        """Continue with the rows the previous run had not written (`write_carried` starts them)."""
        self._carried = list(carried)
        self._unwritten: dict[str, UsageRecord] = {}
        self._writing: set[asyncio.Task[None]] = set()

    @property
    def unwritten(self) -> list[UsageRecord]:
        """The rows not written yet, oldest first (what continuing as new carries)."""
        return [*self._carried, *self._unwritten.values()][-MAX_UNWRITTEN_USAGE:]

    def write_carried(self) -> None:
        """Start writing the carried rows (once, when the run starts)."""
        carried, self._carried = self._carried, []
        for row in carried:
            self.write(row)

    def write(self, row: UsageRecord) -> None:
        """Start writing `row`; the session does not wait for it."""
        self._unwritten[row.request_id] = row
        while len(self._unwritten) > MAX_UNWRITTEN_USAGE:  # a store down for long: the oldest go
            dropped = next(iter(self._unwritten))
            workflow.logger.warning("the usage of %s was not recorded: too many rows unwritten", dropped)
            del self._unwritten[dropped]
        task = asyncio.create_task(self._written(row))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _written(self, row: UsageRecord) -> None:
        try:
            await call_activity(RECORD_USAGE, row)
        except ActivityError as err:  # the store did not answer after the retries: the row is lost
            workflow.logger.warning("the usage of %s was not recorded: %s", row.request_id, err)
        self._unwritten.pop(row.request_id, None)
