"""Usage an organization can see: one record per request, written once at its end (docs/usage.md).

A session writes a `UsageRecord` when a request ends (`workflows.session.requests`, behind the
`usage-record` patch) through the `record_usage` activity; the store keys it by
(`session_id`, `request_id`), so a retried activity writes it once. Whose request it was is
the owner of the session's id (`contracts.memory.workflow_owner`: a gateway session's
`gw/<principal>/<agent>/...`, else `local`, as memory decides it). The report groups records
by the keys of `GROUP_KEYS` and sums them (`UsageReportRow`).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from contracts.run import RunStatus

USAGE_RECORD_PATCH: Final = "usage-record"
"""The patch under which a session records each request's usage at its end."""
GroupKey = Literal["principal", "agent", "version", "day"]
GROUP_KEYS: Final[tuple[GroupKey, ...]] = ("principal", "agent", "version", "day")
"""What a report may group by (`principal`: an admin's report; every other caller sees its own)."""
DEFAULT_GROUP_BY: Final[tuple[GroupKey, ...]] = ("agent", "version", "day")
MAX_REPORT_DAYS: Final = 366
"""The longest range one report covers (from and to included)."""
Day = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
"""A UTC day, `YYYY-MM-DD`."""


class UsageRecord(BaseModel):
    """What one request used, as its session saw it end (the `record_usage` activity's input).

    `version` is the agent's version that answered (agent versions), None for a code profile
    or when unknown; `latency_ms` runs from the request's start (its run's, when it waited
    for another) to its end; `day` is the UTC day it ended.
    """

    model_config = ConfigDict(extra="forbid")

    session_id: Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
    request_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    principal: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    agent: Annotated[str, StringConstraints(max_length=200)]
    version: Annotated[int, Field(ge=1)] | None = None
    status: RunStatus
    day: Day
    ended_at: float
    latency_ms: Annotated[int, Field(ge=0)]
    prompt_tokens: Annotated[int, Field(ge=0)] = 0
    completion_tokens: Annotated[int, Field(ge=0)] = 0
    cost_usd: Annotated[float, Field(ge=0)] = 0.0

    @property
    def failed(self) -> bool:
        """Whether the request failed (a cancelled one is a request, not a failure)."""
        return self.status == "failed"


class UsageWritten(BaseModel):
    """What `record_usage` did: `written` False when the request was recorded already."""

    written: bool


class UsageReportRow(BaseModel):
    """One group of a report: the keys it is grouped by (the others None, left out) and its sums.

    `latency_ms_p50` and `latency_ms_p99` are nearest-rank percentiles of the group's requests.
    """

    principal: str | None = None
    agent: str | None = None
    version: int | None = None
    day: str | None = None
    requests: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_ms_p50: int
    latency_ms_p99: int

    def shown(self, keys: tuple[str, ...]) -> dict[str, object]:
        """The row as the report answers it: the `keys` it is grouped by (null included), then its sums."""
        body = self.model_dump(mode="json")
        return {k: v for k, v in body.items() if k in keys or k not in GROUP_KEYS}
