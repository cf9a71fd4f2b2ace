"""The `RunAdmission` workflow: one principal's active-request slots, granted one decision at a time.

`admit` (an Update, sent with start by `activities.background.run_admission.admit_request`)
grants a slot while fewer than the asker's limit are held, else refuses; the decisions are
taken one at a time (a workflow lock), so concurrent asks from any number of gateways and
workers never hold more than the limit. A holder asking again is granted the slot it holds.

At the limit, before refusing, the workflow checks its slots (`check_admission_slots`, at most
once a `RECHECK_S`): a slot whose request ended, whose session is gone, or whose ask never
arrived within `ASK_GRACE_S` is freed. `release` (a signal) frees a slot at once (the asker's
ask made no new request). While slots are held the check also runs every `SWEEP_S`, so a
principal's stale slots do not outlive their requests by long; with none held, the workflow
ends (the next `admit` starts it again).

State: at most the limit of slots (`MAX_ADMISSION_SLOTS`) and the last `MAX_RECENT_DECISIONS`
decisions. After `MAX_ADMITS_PER_RUN` admits (Temporal takes 2,000 Updates per execution), or
when Temporal suggests it, it continues as new carrying both.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from contracts.activities import CHECK_ADMISSION_SLOTS
from contracts.admission import (
    ADMISSION_ROLLING,
    ADMISSION_WORKFLOW_TYPE,
    ADMIT_UPDATE,
    MAX_RECENT_DECISIONS,
    RELEASE_SIGNAL,
    SLOTS_QUERY,
    AdmissionState,
    AdmitDecision,
    AdmitInput,
    Decision,
    Slot,
    SlotCheck,
    SlotHolder,
)
from contracts.decoding import PayloadProblem, decode_args
from workflows.activity_calls import call_activity
from workflows.refusals import decode_or_refuse, refusal

RECHECK_S = 1.0
"""At the limit, the slots are checked at most this often (refusals in between are immediate)."""
ASK_GRACE_S = 60.0
"""A granted slot whose request the session does not know yet is kept this long (the ask is on its way)."""
SWEEP_S = 300.0
MAX_ADMITS_PER_RUN = 100
"""Far below Temporal's 2,000 Updates per execution, and a history short to replay."""


def _key(holder: SlotHolder) -> tuple[str, str]:
    return holder.session_id, holder.request_id


@workflow.defn(name=ADMISSION_WORKFLOW_TYPE)
class RunAdmission:
    """A principal's active-request slots (see the module docstring)."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """The slots and decisions carried from the previous run, if any."""
        try:
            state = decode_args(args, AdmissionState, "the admission's state")
        except PayloadProblem:  # a carry that does not decode: start empty (slots are re-checked anyway)
            state = AdmissionState()
        self._slots: dict[tuple[str, str], Slot] = {_key(s): s for s in state.slots}
        self._recent: list[Decision] = list(state.recent)
        self._lock = asyncio.Lock()
        self._admits = 0
        self._checked_at: float | None = None

    @workflow.run
    async def run(self, *args: Any) -> None:
        """Serve admits; sweep while slots are held; end when none are; continue as new when long."""
        while True:
            try:
                await workflow.wait_condition(self._long, timeout=timedelta(seconds=SWEEP_S))
            except TimeoutError:
                async with self._lock:
                    await self._check()
                if not self._slots and workflow.all_handlers_finished():
                    return
                continue
            await workflow.wait_condition(workflow.all_handlers_finished)
            workflow.continue_as_new(self._state())

    @workflow.update(name=ADMIT_UPDATE)
    async def admit(self, *args: Any) -> AdmitDecision:
        """Grant `AdmitInput`'s request a slot if fewer than its limit are held, else refuse."""
        try:
            ask = decode_args(args, AdmitInput, "the admit", required=True)
        except PayloadProblem as problem:
            raise refusal(problem) from None
        self._admits += 1
        async with self._lock:
            key = _key(ask)
            if key not in self._slots and len(self._slots) >= ask.limit and self._may_check():
                await self._check()
            granted = key in self._slots or len(self._slots) < ask.limit
            if granted and key not in self._slots:
                self._slots[key] = Slot(
                    session_id=ask.session_id, request_id=ask.request_id, granted_at=workflow.now()
                )
            outcome = "granted" if granted else "refused"
            self._recent = [
                *self._recent[-(MAX_RECENT_DECISIONS - 1) :],
                Decision(
                    session_id=ask.session_id, request_id=ask.request_id, outcome=outcome, at=workflow.now()
                ),
            ]
            return AdmitDecision(outcome=outcome, held=len(self._slots), limit=ask.limit)

    @admit.validator
    def _admit_fits(self, *args: Any) -> None:
        decode_or_refuse(args, AdmitInput, "the admit")
        if self._admits >= MAX_ADMITS_PER_RUN:  # rejected, not in history: the asker sends it to the next run
            raise ApplicationError("the admission continues as new: ask again", type=ADMISSION_ROLLING)

    @workflow.signal(name=RELEASE_SIGNAL)
    def release(self, *args: Any) -> None:
        """Free the slot of `SlotHolder` (its ask made no new request); an unknown holder changes nothing."""
        try:
            holder = decode_args(args, SlotHolder, "the release", required=True)
        except PayloadProblem:
            return
        self._slots.pop(_key(holder), None)

    @workflow.query(name=SLOTS_QUERY)
    def slots(self) -> AdmissionState:
        """The held slots and the recent decisions."""
        return self._state()

    def _long(self) -> bool:
        return self._admits >= MAX_ADMITS_PER_RUN or workflow.info().is_continue_as_new_suggested()

    def _may_check(self) -> bool:
        now = workflow.time()
        return self._checked_at is None or now - self._checked_at >= RECHECK_S

    async def _check(self) -> None:
        """Free the slots whose requests ended (the caller holds the lock)."""
        self._checked_at = workflow.time()
        if not self._slots:
            return
        checked = list(self._slots.values())
        try:
            result = await call_activity(
                CHECK_ADMISSION_SLOTS, SlotCheck(slots=checked, now=workflow.now(), grace_s=ASK_GRACE_S)
            )
        except ActivityError:
            return  # Temporal did not answer: every slot stays held (never more than the limit)
        still = {_key(h) for h in result.held}
        for slot in checked:
            if _key(slot) not in still:
                self._slots.pop(_key(slot), None)

    def _state(self) -> AdmissionState:
        return AdmissionState(slots=list(self._slots.values()), recent=list(self._recent))
