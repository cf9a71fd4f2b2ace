"""Executing one round of tool calls: concurrency, retries, and failure-to-result mapping.

A tool's failure never fails the run: the model receives an error result instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts import AgentConfig, ToolCallRequest, ToolError, ToolOutcome
    from contracts.activities import TOOL_ACTIVITY, tool_activity_summary
    from conversation import ToolCall


def cancelled_outcome(call: ToolCall) -> ToolOutcome:
    """The result given to a call that the run's end left unanswered."""
    return ToolOutcome(
        ok=False,
        attempts=0,
        error=ToolError(type="cancelled", message=f"tool {call.name} was cancelled: the run ended"),
    )


def _failure_outcome(call: ToolCall, err: ActivityError, config: AgentConfig) -> ToolOutcome:
    cause = err.cause
    attempts = config.tool_max_retries + 1
    if isinstance(cause, TimeoutError):
        return ToolOutcome(
            ok=False,
            attempts=attempts,
            error=ToolError(
                type="timeout",
                message=f"tool {call.name} timed out after {config.tool_timeout_s:g}s",
                retryable=True,
            ),
        )
    if isinstance(cause, ApplicationError):
        return ToolOutcome(
            ok=False,
            attempts=1 if cause.non_retryable else attempts,
            error=ToolError(
                type=cause.type or "tool_error",
                message=cause.message,
                details=list(cause.details) if cause.details else None,
                retryable=not cause.non_retryable,
            ),
        )
    return ToolOutcome(ok=False, attempts=attempts, error=ToolError(type="tool_error", message=str(err)))


async def execute_tool(call: ToolCall, config: AgentConfig, request_id: str, run_id: str) -> ToolOutcome:
    """Run one tool call as an activity; unknown names and exhausted retries become error results."""
    if call.name not in config.tools:
        available = ", ".join(config.tools) or "none"
        return ToolOutcome(
            ok=False,
            attempts=0,
            error=ToolError(
                type="unknown_tool",
                message=f"unknown tool {call.name!r}; available tools: {available}",
            ),
        )
    request = ToolCallRequest(
        call=call, request_id=request_id, run_id=run_id, tool_context=config.tool_context
    )
    try:
        return await workflow.execute_activity(
            TOOL_ACTIVITY,
            request,
            result_type=ToolOutcome,
            start_to_close_timeout=timedelta(seconds=config.tool_timeout_s),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=max(config.tool_retry_backoff_s, 0.001)),
                backoff_coefficient=2.0,
                maximum_attempts=config.tool_max_retries + 1,
            ),
            cancellation_type=workflow.ActivityCancellationType.TRY_CANCEL,
            summary=tool_activity_summary(request),
        )
    except ActivityError as err:
        if isinstance(err.cause, CancelledError):
            raise  # the run is being cancelled: not a tool failure
        return _failure_outcome(call, err, config)


async def run_round(
    calls: list[ToolCall],
    concurrency: int,
    execute: Callable[[int, ToolCall], Awaitable[None]],
) -> None:
    """Run `execute` for every call, at most `concurrency` at a time; `execute` stores the results."""
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, call: ToolCall) -> None:
        async with gate:
            await execute(index, call)

    await asyncio.gather(*(one(index, call) for index, call in enumerate(calls)))
