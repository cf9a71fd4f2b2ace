"""The run admission's payloads: one `RunAdmission` workflow per principal holds its active-request slots.

An ask (any protocol's, or a schedule's firing) first sends `admit` to `admission/<principal>`
(Update-with-start): the workflow grants a slot while fewer than the limit are held, else
refuses. Every gateway and worker sends its admits to the same workflow, which decides them one
at a time, so the limit holds whatever the concurrency. A slot names its holder, the request
(`session_id`, `request_id`), and is held until that request ends: the asker releases it at
once when the ask made no new request (refused, steered), and the workflow's check
(`check_admission_slots`) frees the slots of requests that ended, or of sessions gone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import BaseModel, Field, StringConstraints

from conversation.bounds import Id

ADMISSION_WORKFLOW_TYPE: Final = "RunAdmission"
ADMISSION_PREFIX: Final = "admission"
ADMIT_UPDATE: Final = "admit"
RELEASE_SIGNAL: Final = "release"
SLOTS_QUERY: Final = "slots"
ADMISSION_ROLLING: Final = "admission_rolling"
"""The error type of an `admit` the workflow rejects while it continues as new (send it again)."""
MAX_ADMISSION_SLOTS: Final = 1_000
"""The largest active-request limit: the slots a `RunAdmission` holds (and carries) at most."""
MAX_RECENT_DECISIONS: Final = 32
"""The decisions a `RunAdmission` keeps (its `slots` query shows them)."""

AdmitOutcome = Literal["granted", "refused"]


class SlotHolder(BaseModel):
    """The request a slot is held for."""

    session_id: Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
    request_id: Id


class AdmitInput(SlotHolder):
    """`admit`: a slot for this request, under the asker's limit."""

    limit: Annotated[int, Field(ge=1, le=MAX_ADMISSION_SLOTS)]


class Slot(SlotHolder):
    """A held slot and when it was granted (an ask that never arrived is freed after a grace)."""

    granted_at: datetime


class AdmitDecision(BaseModel):
    """What `admit` decided, and how many slots were held after it (of `limit`)."""

    outcome: AdmitOutcome
    held: int
    limit: int


class Decision(SlotHolder):
    """One decision in the workflow's recent book."""

    outcome: AdmitOutcome
    at: datetime


class AdmissionState(BaseModel):
    """A `RunAdmission`'s state: its input on continue-as-new and its `slots` query's answer."""

    slots: list[Slot] = Field(default=[], max_length=MAX_ADMISSION_SLOTS)
    recent: list[Decision] = Field(default=[], max_length=MAX_RECENT_DECISIONS)


class SlotCheck(BaseModel):
    """The input of `check_admission_slots`: the held slots, and how long an unseen request keeps one."""

    slots: list[Slot] = Field(max_length=MAX_ADMISSION_SLOTS)
    now: datetime
    grace_s: float


class SlotsHeld(BaseModel):
    """The slots whose requests still wait or run (the others may be released)."""

    held: list[SlotHolder] = Field(max_length=MAX_ADMISSION_SLOTS)


def admission_workflow_id(principal: str) -> str:
    """The id of `principal`'s admission workflow: `admission/<principal>`."""
    return f"{ADMISSION_PREFIX}/{principal}"
