"""`ActivityMetricsInterceptor`: every activity attempt counted in the worker's metrics, in one place.

Each attempt: its queue wait (scheduled to started), how long it ran, its outcome, the attempts
running now; a `deliver_webhook` attempt also counts as a webhook delivery by outcome
(`delivered`, `given_up`, or `retried` when it raised and Temporal tries again). See
`activities.worker_metrics` and docs/metrics.md.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import CancelledError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from activities.worker_metrics import (
    ACTIVITIES,
    ACTIVITIES_ACTIVE,
    ACTIVITY_QUEUE_WAIT,
    ACTIVITY_SECONDS,
    WEBHOOK_DELIVERIES,
)
from contracts.activities import DELIVER_WEBHOOK_ACTIVITY
from contracts.webhooks import WebhookOutcome

__all__ = ["ActivityMetricsInterceptor"]


class ActivityMetricsInterceptor(Interceptor):
    """Counts every activity attempt of the workers it is on (the plugin puts it on each)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap each activity's execution."""
        return _MeasuredActivity(next)


class _MeasuredActivity(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        name = info.activity_type
        waited = (datetime.now(UTC) - info.current_attempt_scheduled_time).total_seconds()
        ACTIVITY_QUEUE_WAIT.labels(name).observe(max(0.0, waited))
        active = ACTIVITIES_ACTIVE.labels(name)
        active.inc()
        started = time.monotonic()
        outcome = "failed"
        try:
            result = await super().execute_activity(input)
            outcome = "completed"
            if name == DELIVER_WEBHOOK_ACTIVITY and isinstance(result, WebhookOutcome):
                WEBHOOK_DELIVERIES.labels("delivered" if result.delivered else "given_up").inc()
            return result
        except (CancelledError, asyncio.CancelledError):
            outcome = "cancelled"
            raise
        except Exception:
            if name == DELIVER_WEBHOOK_ACTIVITY:
                WEBHOOK_DELIVERIES.labels("retried").inc()
            raise
        finally:
            active.dec()
            ACTIVITY_SECONDS.labels(name).observe(time.monotonic() - started)
            ACTIVITIES.labels(name, outcome).inc()
