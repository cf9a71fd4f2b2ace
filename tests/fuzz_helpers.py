"""What the fuzz tests share: drawing cases up front, a raw client, failed workflow tasks, waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    Client,
)
from temporalio.converter import DataConverter

from tests.helpers import BENIGN_TASK_FAILURES

BATCH = 8
"""Cases sent at once."""
SAFETY_NET_S = 300
"""How long a wait may take before the test fails: a safety net, never what the test measures."""
T = TypeVar("T")


def generate(strategy: st.SearchStrategy[T], examples: int) -> list[T]:
    """Draw `examples` values with hypothesis, up front (the targets are stateful: no shrinking).

    Drawing happens before any junk is sent, on the test's thread: hypothesis is not thread-safe
    while the worker imports modules, and a failure message names its case exactly anyway.
    """
    drawn: list[T] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )
    @given(strategy)
    def collect(value: T) -> None:
        drawn.append(value)

    collect()
    assert len(drawn) == examples, f"hypothesis drew {len(drawn)} examples, not {examples}"
    return drawn


def raw_client(client: Client) -> Client:
    return Client(client.service_client, namespace=client.namespace, data_converter=DataConverter.default)


async def task_failures(client: Client, workflow_id: str) -> list[str]:
    """Every failed workflow task in every run of `workflow_id` (following continue-as-new back)."""
    failures: list[str] = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                attributes = event.workflow_task_failed_event_attributes
                if attributes.cause in BENIGN_TASK_FAILURES:
                    continue
                cause = WorkflowTaskFailedCause.Name(attributes.cause)
                failures.append(f"{workflow_id}: {cause}: {attributes.failure.message[:300]}")
        started = history.events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return failures
        run_id = started.continued_execution_run_id


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = SAFETY_NET_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s}s"
        await asyncio.sleep(0.1)
