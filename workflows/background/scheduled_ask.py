"""The `ScheduledAsk` workflow: one firing of a schedule (Temporal Schedules start it).

A firing resolves the session it asks (the schedule's named session, or a fresh one:
`FiringInput.fresh_session_prefix` and the firing's time), asks it through the
`ask_for_schedule` activity (update-with-start, like a client's ask) and ends with a
`FiringResult`: the thread and request it made, or the refusal it met (`skipped` when the
session was busy under overlap `skip`). Its memo says the same (`thread_id`, `request_id`,
`status`), so a schedule's description and the Web UI read each firing without its history.
A start input that does not decode fails the firing once, by name.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from contracts.activities import ASK_FOR_SCHEDULE
from contracts.decoding import PayloadProblem, decode_args
from contracts.schedules import (
    FIRING_WORKFLOW_TYPE,
    FiringAsk,
    FiringInput,
    FiringResult,
    firing_workflow_id_base,
)
from contracts.webhooks import WebhookBody, WebhookData
from contracts.workflow_ids import bounded_id
from workflows.activity_calls import call_activity
from workflows.refusals import refusal
from workflows.webhook_child import start_delivery


def firing_session_id(firing: FiringInput, firing_id: str) -> str:
    """The session a firing asks: the named one, or a fresh one per firing (prefix + the firing's time)."""
    if firing.session_id is not None:
        return firing.session_id
    stamp = firing_id.removeprefix(firing_workflow_id_base(firing.schedule_id) + "-")
    return bounded_id(firing.fresh_session_prefix, stamp.replace(":", ""))


@workflow.defn(name=FIRING_WORKFLOW_TYPE)
class ScheduledAsk:
    """One firing: ask the session, record what became of the ask."""

    @workflow.run
    async def run(self, *args: Any) -> FiringResult:
        """Ask the firing's session; the request it made, or the refusal it met."""
        try:
            firing = decode_args(args, FiringInput, "the firing's input", required=True)
        except PayloadProblem as problem:
            raise refusal(problem) from None
        firing_id = workflow.info().workflow_id
        session_id = firing_session_id(firing, firing_id)
        workflow.set_current_details(f"asking {session_id} for schedule {firing.schedule_id}")
        result = await call_activity(
            ASK_FOR_SCHEDULE, FiringAsk(firing=firing, session_id=session_id, firing_id=firing_id)
        )
        workflow.upsert_memo(
            {"thread_id": result.session_id, "request_id": result.request_id, "status": result.status}
        )
        if firing.webhook_url is not None:
            data = WebhookData.of_session(
                result.session_id,
                schedule_id=firing.schedule_id,
                agent=firing.agent_id,
                request_id=result.request_id,
                status=result.status,
                error=result.message if result.status != "asked" else None,
            )
            body = WebhookBody(type="schedule.fired", timestamp=workflow.now(), data=data)
            await start_delivery(firing.webhook_url, "fired", body)
        return result
