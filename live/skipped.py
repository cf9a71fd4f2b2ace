"""Entries of the live channel a reader could not use, skipped and counted (`SkippedEntries`)."""

from __future__ import annotations

import logging

_log = logging.getLogger(__name__)


class SkippedEntries:
    """The channel's entries its readers skipped as unusable: counted and logged, never fatal."""

    def __init__(self) -> None:
        """None yet."""
        self.count = 0

    def skip(self, workflow_id: str, entry_id: str, why: str) -> None:
        """Count entry `entry_id` of the run's entry as skipped, and log it."""
        self.count += 1
        _log.warning(
            "live channel: skipped entry %s of %s (%s; %d skipped)", entry_id, workflow_id, why, self.count
        )
