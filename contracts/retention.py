"""Retention: threads idle longer than `REACT_RETENTION_DAYS` are erased by a Schedule the worker keeps.

The worker keeps the Schedule `RETENTION_SCHEDULE_ID` in line with its setting (created or
updated when set, deleted when not: `hosting.retention`). Each firing starts a `RetentionSweep`
workflow, whose one activity erases the sessions whose last request (or, with none, whose start)
is older than `idle_s`, at most `limit` of them a sweep; the next firing goes on from there.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

RETENTION_WORKFLOW_TYPE: Final = "RetentionSweep"
RETENTION_SCHEDULE_ID: Final = "react-retention"
RETENTION_WORKFLOW_ID: Final = "react-retention-sweep"
"""The id of a sweep (the Schedule appends its firing time)."""
MAX_SWEEP_SESSIONS: Final = 1_000
"""Sessions one sweep erases at most (the next firing erases the rest)."""
MAX_LISTED_ERASED: Final = 50
"""Session ids a sweep's result names (the count is always whole)."""


class RetentionInput(BaseModel):
    """One sweep: erase the sessions idle for at least `idle_s` seconds, at most `limit` of them.

    `id_prefix`: only the sessions whose workflow id starts with it (default: every session; the
    gateway's are `gw/`).
    """

    model_config = ConfigDict(extra="forbid")

    idle_s: Annotated[float, Field(gt=0)]
    limit: Annotated[int, Field(ge=1, le=MAX_SWEEP_SESSIONS)] = MAX_SWEEP_SESSIONS
    id_prefix: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./-]{0,100}$")] = ""


class RetentionResult(BaseModel):
    """What a sweep did: the sessions it looked at, how many it erased, the first ids it erased."""

    model_config = ConfigDict(extra="forbid")

    checked: int = 0
    erased: int = 0
    erased_ids: Annotated[list[str], Field(max_length=MAX_LISTED_ERASED)] = []
    skipped: int = 0
    """Sessions that could not be read (no worker answered their query): kept for the next sweep."""
