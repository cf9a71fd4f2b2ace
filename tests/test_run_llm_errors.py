"""LLM failures: Temporal retries what a provider would retry, and fails fast on the rest."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from contracts import RunResult
from tests.helpers import start_run, turn


async def llm_attempts(handle: WorkflowHandle[Any, RunResult]) -> list[int]:
    history = await handle.fetch_history()
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]


async def test_rate_limit_then_success(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("after retry", error="rate_limit", error_times=1)])
    result = await handle.result()
    assert result.status == "completed" and result.result == "after retry"
    assert await llm_attempts(handle) == [2]


async def test_server_error_twice_then_success(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("recovered", error="server", error_times=2)])
    result = await handle.result()
    assert result.result == "recovered"
    assert await llm_attempts(handle) == [3]


async def test_auth_error_fails_fast_without_retries(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [turn("never", error="auth", error_times=5)])
    result = await handle.result()
    assert result.status == "failed" and result.termination_reason == "error"
    assert result.error is not None and result.error.type == "AuthenticationError"
    assert await llm_attempts(handle) == [1]


async def test_call_past_the_end_of_the_script_fails_clearly(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [])
    result = await handle.result()
    assert result.status == "failed"
    assert result.error is not None and "past the end of the script" in result.error.message
    assert await llm_attempts(handle) == [1]
