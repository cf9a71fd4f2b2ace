"""A schedule's firing asks its session: `ask_for_schedule`, the ask's update-with-start from a worker.

It is the same Update-with-start a client's ask sends (`clients.session_ask.ask_with_start`:
`ask`, starting the session with the schedule's agent if it does not run yet,
`USE_EXISTING`), sent with the worker's own Temporal client (`activity.client()`). A
refusal by the session is the firing's answer, not a failure to retry: `busy` (overlap
`skip`) makes the firing `skipped`; any other code (`ask_queue_full`, `invalid_input`, ...)
`refused`. Transport errors fail the attempt and Temporal retries it; the ask's
`request_id` is the firing's id, so a retried attempt is answered with the original request.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError

from contracts.activities import ASK_FOR_SCHEDULE_ACTIVITY
from contracts.errors import BUSY
from contracts.schedules import FIRING_REF, SCHEDULE_REF, FiringAsk, FiringResult
from contracts.session import SESSION_WORKFLOW_TYPE, AskAccepted, AskInput, SessionInput
from contracts.web_ui import static_details, static_summary
from contracts.workflow_ids import bounded_id


def firing_ask(request: FiringAsk) -> AskInput:
    """The ask a firing sends: the schedule's message, its busy answer and where it came from.

    Its request id is the firing's workflow id with `.` for `/`: the same on every attempt (a
    retried attempt is answered with the original request) and one segment of a URL path.
    """
    firing = request.firing
    return AskInput(
        query=firing.query,
        request_id=bounded_id(request.firing_id.replace("/", "."), ""),  # one URL path segment
        on_busy=firing.on_busy,
        refs={SCHEDULE_REF: firing.schedule_id[:1_000], FIRING_REF: request.firing_id[:1_000]},
        webhook_url=firing.webhook_url,
    )


@activity.defn(name=ASK_FOR_SCHEDULE_ACTIVITY)
async def ask_for_schedule(request: FiringAsk) -> FiringResult:
    """Ask the firing's session (starting it if needed); the request it made, or the refusal it met."""
    firing = request.firing
    ask = firing_ask(request)
    session = SessionInput(agent_id=firing.agent_id, config=firing.config)
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        SESSION_WORKFLOW_TYPE,
        session,
        id=request.session_id,
        task_queue=activity.info().task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=static_summary(firing.config, firing.query, firing.agent_id),
        static_details=static_details(firing.config, firing.query, None, firing.agent_id),
    )
    client = activity.client()
    try:
        accepted: AskAccepted = await client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
            "ask", ask, start_workflow_operation=start, result_type=AskAccepted
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if not isinstance(cause, ApplicationError) or cause.type is None:
            raise
        return FiringResult(
            schedule_id=firing.schedule_id,
            session_id=request.session_id,
            status="skipped" if cause.type == BUSY else "refused",
            refusal=cause.type,
            message=cause.message[:1_000],
        )
    return FiringResult.of_ask(request, accepted)
