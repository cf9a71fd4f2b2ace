"""A principal's run admission from the asker's side, and the check that frees the slots of ended requests.

`admit_request` sends `admit` to the principal's `RunAdmission` (Update-with-start,
`with_start.update_with_start`, so the first ask starts it) and `release_request` frees a slot
whose ask made no new request; the gateway's request core and a schedule's firing
(`ask_for_schedule`) both admit through them, so one rule bounds every ask.
`check_admission_slots` is the workflow's activity: it reads each holder's session (`requests`,
one query per session) and keeps the slots whose request still waits or runs (status `running`:
queued, running or awaiting approval), and those whose ask has not arrived within the grace; a
session that is gone or closed holds nothing.
"""

from __future__ import annotations

import asyncio
import logging

from temporalio import activity
from temporalio.client import Client, WorkflowQueryRejectedError, WorkflowUpdateFailedError
from temporalio.common import QueryRejectCondition
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.activities import CHECK_ADMISSION_SLOTS_ACTIVITY
from contracts.admission import (
    ADMISSION_ROLLING,
    ADMISSION_WORKFLOW_TYPE,
    ADMIT_UPDATE,
    RELEASE_SIGNAL,
    AdmissionState,
    AdmitDecision,
    AdmitInput,
    Slot,
    SlotCheck,
    SlotHolder,
    SlotsHeld,
    admission_workflow_id,
)
from contracts.session import RequestRecord
from with_start import update_with_start

__all__ = ["admit_request", "check_admission_slots", "release_request"]

ADMIT_ATTEMPTS = 8
"""Sends of one admit while its workflow continues as new (about 4.5 s; each run takes hundreds)."""
MAX_CONCURRENT_READS = 16
CLOSED: list[RequestRecord] = []
"""The records of a session that is closed: none of its requests waits or runs."""

log = logging.getLogger(__name__)


async def admit_request(
    client: Client, principal: str, holder: SlotHolder, limit: int, task_queue: str
) -> AdmitDecision:
    """The admission's decision on `holder`'s request under `limit` (its workflow started if needed).

    Raises:
        RPCError: Temporal did not answer.
        WorkflowUpdateFailedError: the admit was refused by the workflow for another reason.
    """
    ask = AdmitInput(session_id=holder.session_id, request_id=holder.request_id, limit=limit)
    for attempt in range(ADMIT_ATTEMPTS):
        try:
            return await update_with_start(
                client,
                ADMISSION_WORKFLOW_TYPE,
                AdmissionState(),
                ADMIT_UPDATE,
                ask,
                workflow_id=admission_workflow_id(principal),
                task_queue=task_queue,
                result_type=AdmitDecision,
                summary=f"active-request admission of {principal}",
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            rolling = isinstance(cause, ApplicationError) and cause.type == ADMISSION_ROLLING
            if not rolling or attempt == ADMIT_ATTEMPTS - 1:
                raise
        await asyncio.sleep(min(1.0, 0.1 * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


async def release_request(client: Client, principal: str, holder: SlotHolder) -> None:
    """Free `holder`'s slot (its ask made no new request); if Temporal does not answer, the check frees it."""
    try:
        await client.get_workflow_handle(admission_workflow_id(principal)).signal(
            RELEASE_SIGNAL, SlotHolder(session_id=holder.session_id, request_id=holder.request_id)
        )
    except RPCError:
        log.warning("could not release the slot of %s; its check will", holder.request_id)


@activity.defn(name=CHECK_ADMISSION_SLOTS_ACTIVITY)
async def check_admission_slots(check: SlotCheck) -> SlotsHeld:
    """The slots of `check` whose requests still wait or run, or whose ask is still on its way."""
    client = activity.client()
    by_session: dict[str, list[Slot]] = {}
    for slot in check.slots:
        by_session.setdefault(slot.session_id, []).append(slot)
    gate = asyncio.Semaphore(MAX_CONCURRENT_READS)

    async def held_of(session_id: str, slots: list[Slot]) -> list[SlotHolder]:
        async with gate:
            records = await _requests(client, session_id)
        if records is None:  # Temporal did not answer: keep them
            return list(slots)
        if records is CLOSED:
            return []
        status = {r.request_id: r.status for r in records}
        kept: list[SlotHolder] = []
        for slot in slots:
            arriving = (check.now - slot.granted_at).total_seconds() < check.grace_s
            if status.get(slot.request_id) == "running" or (slot.request_id not in status and arriving):
                kept.append(slot)
        return kept

    groups = await asyncio.gather(*(held_of(s, slots) for s, slots in by_session.items()))
    return SlotsHeld(
        held=[SlotHolder(session_id=h.session_id, request_id=h.request_id) for g in groups for h in g]
    )


async def _requests(client: Client, session_id: str) -> list[RequestRecord] | None:
    """The session's records; `CLOSED` when it ended; [] when it does not exist (yet); None: no answer."""
    try:
        return await client.get_workflow_handle(session_id).query(
            "requests",
            result_type=list[RequestRecord],
            reject_condition=QueryRejectCondition.NOT_OPEN,
        )
    except WorkflowQueryRejectedError:
        return CLOSED
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return []
        return None
