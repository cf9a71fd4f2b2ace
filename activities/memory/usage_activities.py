"""`record_usage`: one request's usage row, written into the store the memory activities use.

The row's key is the request's (session id, request id), so a retried activity (or a replayed
session that schedules it again) writes it once. A store that does not answer raises, and
Temporal retries the activity (`contracts.activities.RECORD_USAGE`'s bounded policy).
"""

from __future__ import annotations

from temporalio import activity

from activities.memory.memory_activities import MemoryActivities
from contracts.activities import RECORD_USAGE_ACTIVITY
from contracts.usage import UsageRecord, UsageWritten


class UsageActivities:
    """The usage activity, on the store of `memory` (opened once per worker, on first use)."""

    def __init__(self, memory: MemoryActivities) -> None:
        """Share the memory activities' store."""
        self._memory = memory

    @activity.defn(name=RECORD_USAGE_ACTIVITY)
    async def record_usage(self, usage: UsageRecord) -> UsageWritten:
        """Write the request's usage row; `written` False when it was written before."""
        store = await self._memory.store()
        return UsageWritten(written=await store.usage.record(usage))
