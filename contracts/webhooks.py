"""Webhooks: a signed POST when a request ends or a schedule fires, delivered until acknowledged.

A delivery is a `DeliverWebhook` workflow (`DELIVERY_WORKFLOW_TYPE`) running the
`deliver_webhook` activity: Temporal retries it with backoff (a worker killed mid-delivery
delivers after restart), the `webhook-id` is the delivery's own id on every attempt, and it
gives up after the deployment's `REACT_WEBHOOK_GIVE_UP_S`, ending with a `WebhookOutcome`
that says so (the Web UI shows it as the workflow's result and details).

The body is `WebhookBody`: `{"type", "timestamp", "data": {"agent", "thread_id", "workflow_id",
"request_id", "status", "answer"?, "schedule_id"?}}`, naming the thread and the schedule as the
API that asked does (`WebhookData.of_session`). The answer is cut at
`MAX_WEBHOOK_ANSWER_CHARS` (`answer_truncated` then says so; the whole answer is the
request's, `await_result` or the gateway's `GET .../requests/{id}`), so a body stays small.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, StringConstraints

DELIVERY_WORKFLOW_TYPE: Final = "DeliverWebhook"
MAX_WEBHOOK_URL_CHARS: Final = 2_000
MAX_WEBHOOK_ANSWER_CHARS: Final = 16_000
"""A webhook's answer is cut here; the rest is read from the request."""

WebhookType = Literal[
    "request.completed", "request.failed", "request.cancelled", "approval.waiting", "schedule.fired"
]
WebhookUrl = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WEBHOOK_URL_CHARS)]
GATEWAY_SESSION_PREFIX: Final = "gw/"
"""A gateway thread's session id: `gw/<principal>/<agent>/<thread>` (`gateway.owners`)."""
SCHEDULE_ID_PREFIX: Final = "schedule/"
"""A schedule's id: `schedule/<owner>/<name>` (`clients.schedules`)."""


class WebhookData(BaseModel):
    """What a webhook says happened: which agent, thread and request, and how it stands."""

    agent: str
    thread_id: str
    request_id: str | None = None
    status: str
    answer: Annotated[str, StringConstraints(max_length=MAX_WEBHOOK_ANSWER_CHARS)] | None = None
    answer_truncated: bool = False
    schedule_id: str | None = None
    error: Annotated[str, StringConstraints(max_length=1_000)] | None = None
    call_id: str | None = None
    tool: str | None = None
    workflow_id: str | None = None
    """The session's workflow id (Temporal's name for the thread)."""
    agent_version: int | None = None
    """The version of the agent made at run time that answered (None: a code profile's request)."""

    @classmethod
    def of_session(cls, session_id: str, *, schedule_id: str | None = None, **fields: Any) -> WebhookData:
        """The data of a webhook about session `session_id`, naming things as the API that asked does.

        A gateway thread (`gw/<principal>/<agent>/<thread>`) is named `<thread>` and its
        schedule (`schedule/<owner>/<name>`) `<name>`, as every gateway answer names them; any
        other session (the typed client's) by its id, and its schedule by its id, as the typed
        client does. `workflow_id` is always the session's workflow id.
        """
        thread_id, schedule = session_id, schedule_id
        if session_id.startswith(GATEWAY_SESSION_PREFIX) and session_id.count("/") >= 3:
            thread_id = session_id.split("/", 3)[3]
            if schedule is not None and schedule.startswith(SCHEDULE_ID_PREFIX):
                schedule = schedule.split("/", 2)[-1]
        return cls(thread_id=thread_id, workflow_id=session_id, schedule_id=schedule, **fields)


class WebhookTarget(BaseModel):
    """Where a run's `approval.waiting` webhooks go, and what they name (a session sets it on its run)."""

    url: WebhookUrl
    agent: Annotated[str, StringConstraints(max_length=200)]
    thread_id: Annotated[str, StringConstraints(max_length=1_000)]


class WebhookBody(BaseModel):
    """The JSON body of a webhook."""

    type: WebhookType
    timestamp: datetime
    data: WebhookData


class WebhookDelivery(BaseModel):
    """One webhook to deliver: where, its id (the `webhook-id` of every attempt) and its body."""

    url: WebhookUrl
    webhook_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    body: WebhookBody


class WebhookOutcome(BaseModel):
    """How a delivery ended: `delivered` (the receiver's 2xx), or given up (`reason`)."""

    delivered: bool
    status_code: int | None = None
    attempts: int = 1
    reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None


def answer_part(answer: str | None) -> tuple[str | None, bool]:
    """A webhook's answer and whether it was cut (at `MAX_WEBHOOK_ANSWER_CHARS`)."""
    if answer is None or len(answer) <= MAX_WEBHOOK_ANSWER_CHARS:
        return answer, False
    return answer[:MAX_WEBHOOK_ANSWER_CHARS], True
