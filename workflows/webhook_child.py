"""Starting a webhook's delivery from a workflow (a session's request end, a schedule's firing).

The delivery is a `DeliverWebhook` child started by name with `ABANDON`: the parent does not
wait for it and may end or continue as new meanwhile; the delivery goes on. Its workflow id
(`<parent id>-webhook-<key>`, kept under the id bound) is the `webhook-id` of every attempt.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from contracts.webhooks import DELIVERY_WORKFLOW_TYPE, WebhookBody, WebhookDelivery
from contracts.workflow_ids import bounded_id


async def start_delivery(url: str, key: str, body: WebhookBody) -> None:
    """Start delivering `body` to `url`; the delivery's id is the parent's id and `key`."""
    delivery_id = bounded_id(workflow.info().workflow_id, f"-webhook-{key}")
    delivery = WebhookDelivery(url=url, webhook_id=delivery_id, body=body)
    await workflow.start_child_workflow(
        DELIVERY_WORKFLOW_TYPE,
        delivery,
        id=delivery_id,
        task_queue=workflow.info().task_queue,
        parent_close_policy=workflow.ParentClosePolicy.ABANDON,
        execution_timeout=timedelta(days=30),
        static_summary=f"webhook {body.type} {body.data.request_id or ''}"[:200],
    )
