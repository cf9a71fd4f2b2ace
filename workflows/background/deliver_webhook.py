"""The `DeliverWebhook` workflow: one webhook, delivered until the receiver acknowledges it or given up.

It runs the `deliver_webhook` activity (retried by Temporal with backoff: a worker killed
mid-delivery delivers after restart, with the same `webhook-id`) and ends with its
`WebhookOutcome`; its current details say how it went, so the Web UI shows a delivery that
gave up, and why. A session or a firing starts it and does not wait (`workflows.webhook_child`).
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from contracts.activities import DELIVER_WEBHOOK
from contracts.decoding import PayloadProblem, decode_args
from contracts.webhooks import DELIVERY_WORKFLOW_TYPE, WebhookDelivery, WebhookOutcome
from workflows.activity_calls import call_activity
from workflows.refusals import refusal


@workflow.defn(name=DELIVERY_WORKFLOW_TYPE)
class DeliverWebhook:
    """Deliver one webhook."""

    @workflow.run
    async def run(self, *args: Any) -> WebhookOutcome:
        """Deliver it; the outcome (delivered, or given up and why)."""
        try:
            delivery = decode_args(args, WebhookDelivery, "the webhook", required=True)
        except PayloadProblem as problem:
            raise refusal(problem) from None
        workflow.set_current_details(f"delivering {delivery.body.type} {delivery.webhook_id}")
        outcome = await call_activity(DELIVER_WEBHOOK, delivery)
        done = "delivered" if outcome.delivered else f"gave up: {outcome.reason}"
        workflow.set_current_details(f"{delivery.body.type} {done} after {outcome.attempts} attempt(s)")
        return outcome
