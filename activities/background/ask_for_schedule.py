"""A schedule's firing asks its session: `ask_for_schedule`, the ask's update-with-start from a worker.

It is the same Update-with-start a client's ask sends (`with_start.ask_with_start`:
`ask`, starting the session with the schedule's agent if it does not run yet,
`USE_EXISTING`), sent with the worker's own Temporal client (`activity.client()`). A
refusal by the session is the firing's answer, not a failure to retry: `busy` (overlap
`skip`) makes the firing `skipped`; any other code (`ask_queue_full`, `invalid_input`, ...)
`refused`. Transport errors fail the attempt and Temporal retries it; the ask's
`request_id` is the firing's id, so a retried attempt is answered with the original request.

A firing counts against its owner's active requests like any ask
(`REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL`, read by the worker; the owner is the one in the
schedule's id): it is admitted first (`run_admission.admit_request`), and at the limit it is
`skipped` with refusal `quota_exceeded` (logged, and in the firing's result and memo), never
retried; an ask that made no new request gives its slot back.
"""

from __future__ import annotations

import os

from temporalio import activity
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.background.run_admission import admit_request, release_request
from contracts.activities import ASK_FOR_SCHEDULE_ACTIVITY
from contracts.admission import SlotHolder
from contracts.errors import BUSY, INVALID_INPUT, QUOTA_EXCEEDED
from contracts.schedules import FIRING_REF, SCHEDULE_REF, FiringAsk, FiringResult, owner_of
from contracts.session import AskInput, SessionInput
from contracts.web_ui import static_details, static_summary
from contracts.workflow_ids import bounded_id
from settings.admission import max_active_of
from settings.env_values import SettingsError
from with_start import ask_with_start


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
    client = activity.client()
    owner = owner_of(firing.schedule_id)
    holder = SlotHolder(session_id=request.session_id, request_id=ask.request_id or request.firing_id)
    limit = _max_active()
    if owner is not None and limit is not None:
        decision = await admit_request(client, owner, holder, limit, activity.info().task_queue)
        if decision.outcome == "refused":
            message = (
                f"quota max_active_per_principal: {owner!r} has {decision.held} active requests of "
                f"{decision.limit}; this firing is skipped"
            )
            activity.logger.warning("schedule %s: %s", firing.schedule_id, message)
            return FiringResult(
                schedule_id=firing.schedule_id,
                session_id=request.session_id,
                status="skipped",
                refusal=QUOTA_EXCEEDED,
                message=message,
            )
    try:
        accepted = await ask_with_start(
            client,
            request.session_id,
            ask,
            session,
            task_queue=activity.info().task_queue,
            summary=static_summary(firing.config, firing.query, firing.agent_id),
            details=static_details(firing.config, firing.query, None, firing.agent_id),
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if not isinstance(cause, ApplicationError) or cause.type is None:
            raise
        if owner is not None and limit is not None:
            await release_request(client, owner, holder)
        return FiringResult(
            schedule_id=firing.schedule_id,
            session_id=request.session_id,
            status="skipped" if cause.type == BUSY else "refused",
            refusal=cause.type,
            message=cause.message[:1_000],
        )
    made = accepted.request_id == holder.request_id and accepted.disposition != "steered"
    if owner is not None and limit is not None and not made:
        await release_request(client, owner, holder)
    return FiringResult.of_ask(request, accepted)


def _max_active() -> int | None:
    """The worker's `REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL` (the gateway's setting, read the same way).

    Raises:
        ApplicationError: `invalid_input`, not retried: the setting is not a valid limit.
    """
    try:
        return max_active_of(os.environ)
    except SettingsError as problem:
        raise ApplicationError(str(problem), type=INVALID_INPUT, non_retryable=True) from None
