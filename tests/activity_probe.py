"""A tiny workflow that calls one activity by name, so tests reach an activity through a real worker.

The product's workflows call `check_tool_arguments` and `resolve_agents` only in some
situations; the probe calls them (or any activity) directly, through the dev server and
the worker's registered activity, with the product's data converter both ways.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from pydantic import JsonValue
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy


@workflow.defn(name="ActivityProbe", sandboxed=False)
class ActivityProbe:
    """Runs the named activity once (no retries) and returns its result as JSON data."""

    @workflow.run
    async def run(self, name: str, argument: JsonValue) -> JsonValue:
        """The activity's result; its failure fails the probe (the cause is the activity's error)."""
        return await workflow.execute_activity(  # pyright: ignore[reportUnknownVariableType]
            name,
            argument,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


async def call_activity(client: Client, task_queue: str, name: str, argument: JsonValue) -> JsonValue:
    """Run activity `name` with `argument` on the worker of `task_queue` and return its result.

    Raises:
        WorkflowFailureError: the activity failed (its `ApplicationError` is the cause's cause).
    """
    return await client.execute_workflow(
        ActivityProbe.run,
        args=[name, argument],
        id=f"probe-{name}-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        execution_timeout=timedelta(seconds=60),
    )
