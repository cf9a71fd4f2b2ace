"""Schedules: an agent that acts on its own, on Temporal Schedules.

A schedule belongs to an owner (a principal) and an agent. Each firing starts one small
workflow, `ScheduledAsk` (`FIRING_WORKFLOW_TYPE`), with a `FiringInput`: it asks a named
session (the conversation continues) or a fresh session per firing, through the same
update-with-start a client's ask uses, and returns a `FiringResult` (the thread and the
request it made, or the refusal it met). The ask carries `refs` `{"schedule_id": ...,
"firing_id": ...}`: the session's request record and the user message of its run keep them,
so each firing is visible in the session's thread as well as in the Web UI.

The overlap policy is the session's own busy answer (`ON_BUSY_OF_OVERLAP`): a firing that
finds the named session busy is refused (`skip`, the firing ends `skipped`), waits
(`buffer_one`, the ask is enqueued), or cancels the running request (`cancel_other`);
`allow_all` runs a fresh session per firing, so firings never meet each other.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import BaseModel, Field, StringConstraints

from contracts.agent import AgentConfig, QueryText
from contracts.bounds import Id
from contracts.ids import PRINCIPAL_PATTERN
from contracts.session import AskAccepted, OnBusy

FIRING_WORKFLOW_TYPE: Final = "ScheduledAsk"
SCHEDULE_REF: Final = "schedule_id"
"""The key of an ask's `refs` (and of its request record's) naming the schedule that asked."""
FIRING_REF: Final = "firing_id"
"""The key of an ask's `refs` naming the firing (the `ScheduledAsk` workflow id) that asked."""

Overlap = Literal["skip", "buffer_one", "cancel_other", "allow_all"]
ON_BUSY_OF_OVERLAP: Final[dict[str, OnBusy]] = {
    "skip": "reject",
    "buffer_one": "enqueue",
    "cancel_other": "interrupt",
    "allow_all": "reject",  # never busy: a fresh session per firing
}
"""The busy answer a firing's ask carries, by the schedule's overlap policy."""


PREFIX: Final = "schedule"
NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
OWNER_PATTERN: Final = PRINCIPAL_PATTERN


def owner_of(schedule_id: str) -> str | None:
    """The owner a schedule id names (None: not a schedule id of this product)."""
    prefix, owner, name = [*schedule_id.split("/", 2), "", ""][:3]
    if prefix != PREFIX or not OWNER_PATTERN.fullmatch(owner) or not NAME_PATTERN.fullmatch(name):
        return None
    return owner


def firing_workflow_id_base(schedule_id: str) -> str:
    """The workflow id of a schedule's firings before the time Temporal appends (`-<RFC 3339 time>`)."""
    return f"{schedule_id}/firing"


FiringStatus = Literal["asked", "skipped", "refused"]


class FiringInput(BaseModel):
    """The `ScheduledAsk` workflow's input: what every firing of one schedule asks, and of whom.

    `session_id` names the session every firing asks; None starts a fresh session per
    firing, whose id is `fresh_session_prefix` followed by the firing's time (the end of
    the firing's workflow id, which Temporal makes `<action id>-<scheduled time>`).
    `config` and `agent_id` start a session that does not run yet.
    """

    schedule_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    agent_id: Id
    query: QueryText
    config: AgentConfig
    session_id: Id | None = None
    fresh_session_prefix: Annotated[str, StringConstraints(max_length=150)] = ""
    on_busy: OnBusy = "reject"
    webhook_url: Annotated[str, StringConstraints(max_length=2_000)] | None = None


class FiringAsk(BaseModel):
    """The input of the `ask_for_schedule` activity: one firing's ask of one session."""

    firing: FiringInput
    session_id: Id
    firing_id: Annotated[str, StringConstraints(min_length=1, max_length=1_000)]


class FiringResult(BaseModel):
    """What one firing did: `asked` (its request's id), `skipped` (the session was busy) or `refused`.

    `thread_id` is the session's workflow id (a fresh session's too); `refusal` is the
    product's error code of a refused or skipped ask (`busy`, `ask_queue_full`, ...).
    """

    schedule_id: str
    session_id: str
    status: FiringStatus
    request_id: str | None = None
    run_workflow_id: str | None = None
    disposition: str | None = None
    refusal: str | None = None
    message: Annotated[str, StringConstraints(max_length=1_000)] | None = None

    @classmethod
    def of_ask(cls, ask: FiringAsk, accepted: AskAccepted) -> FiringResult:
        """The result of an accepted ask."""
        return cls(
            schedule_id=ask.firing.schedule_id,
            session_id=ask.session_id,
            status="asked",
            request_id=accepted.request_id,
            run_workflow_id=accepted.run_workflow_id,
            disposition=accepted.disposition,
        )


MAX_RECENT_FIRINGS: Final = 10
"""How many of a schedule's most recent firings `describe` reads back (Temporal keeps 10)."""


class CalendarSpec(BaseModel):
    """Calendar times a schedule fires at: every combination of the listed values (Temporal's calendars).

    An unset field takes Temporal's default: second, minute and hour 0; every day of the
    month, month and day of the week (0 is Sunday).
    """

    second: list[int] = Field(default=[0], max_length=60)
    minute: list[int] = Field(default=[0], max_length=60)
    hour: list[int] = Field(default=[0], max_length=24)
    day_of_month: list[int] | None = Field(default=None, max_length=31)
    month: list[int] | None = Field(default=None, max_length=12)
    day_of_week: list[int] | None = Field(default=None, max_length=7)


class ScheduleSettings(BaseModel):
    """What a schedule was created with (its memo), as `Schedules.create` took it.

    `session_id` None: a fresh session per firing, named `fresh_session_prefix` + the firing's time.
    """

    owner: str
    agent_id: str
    message_preview: str
    session_id: str | None = None
    fresh_session_prefix: str = ""
    overlap: Overlap = "skip"
    cron: str | None = None
    every_s: int | None = None
    calendars: list[CalendarSpec] = []
    timezone: str | None = None
    jitter_s: int | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    webhook_url: str | None = None


FiringState = Literal["running", "asked", "skipped", "refused", "failed"]


class Firing(BaseModel):
    """One recent firing: when, its workflow (`firing_id`), and the thread and request it made."""

    scheduled_at: datetime
    started_at: datetime
    firing_id: str
    status: FiringState
    thread_id: str | None = None
    request_id: str | None = None


class ScheduleView(ScheduleSettings):
    """A schedule as `Schedules.describe` and `list` read it: its settings, state and firings.

    `recent_firings` (up to `MAX_RECENT_FIRINGS`, oldest first) only from `describe`.
    """

    schedule_id: str
    paused: bool = False
    note: str | None = None
    firings: int = 0
    next_firings: list[datetime] = []
    recent_firings: list[Firing] = []
