"""One round of tool calls: concurrency, retries, per-call status, and failure-to-result mapping.

A tool's failure never fails the run: the model receives an error result instead.
Tools the worker's registry marks as local (fast and pure, named by the LLM activity
in `LLMResponse.local_tools`) run as local activities: no task-queue round trip, but
they run inside the workflow task's time and cannot heartbeat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError

from contracts import AgentConfig, ToolCallRequest, ToolCallStatus, ToolError, ToolOutcome
from contracts.activities import RUN_TOOL, ActivityOptions
from contracts.approval import PendingApproval
from contracts.errors import CANCELLED, TIMEOUT, TOOL_ERROR, UNKNOWN_TOOL
from conversation import ToolCall
from workflows.activity_calls import call_activity
from workflows.activity_options import options_for
from workflows.failures import cut_short
from workflows.run.approvals import ApprovalBook, Verdict


def cancelled_outcome(call: ToolCall) -> ToolOutcome:
    """The result given to a call that the run's end left unanswered."""
    return ToolOutcome(
        ok=False,
        attempts=0,
        error=ToolError(type=CANCELLED, message=f"tool {call.name} was cancelled: the run ended"),
    )


def interrupted_outcome(call: ToolCall, *, started: bool) -> ToolOutcome:
    """The result given to a call that an interrupting steer stopped (or kept from starting)."""
    what = "was cancelled" if started else "was not run"
    message = f"tool {call.name} {what}: the user interrupted with new input"
    return ToolOutcome(ok=False, attempts=0, error=ToolError(type=CANCELLED, message=message))


def _failure_outcome(
    call: ToolCall, err: ActivityError | TimeoutError, options: ActivityOptions
) -> ToolOutcome:
    cause = err.cause if isinstance(err, ActivityError) else err
    attempts = options.maximum_attempts
    if isinstance(cause, TimeoutError):
        message = f"tool {call.name} timed out after {options.start_to_close_timeout_s:g}s"
        return ToolOutcome(
            ok=False, attempts=attempts, error=ToolError(type=TIMEOUT, message=message, retryable=True)
        )
    if isinstance(cause, ApplicationError):
        return ToolOutcome(
            ok=False,
            attempts=1 if cause.non_retryable else attempts,
            error=ToolError(
                type=cause.type or TOOL_ERROR,
                message=cause.message,
                details=list(cause.details) if cause.details else None,
                retryable=not cause.non_retryable,
            ),
        )
    return ToolOutcome(ok=False, attempts=attempts, error=ToolError(type=TOOL_ERROR, message=str(err)))


async def execute_tool(
    call: ToolCall, request: ToolCallRequest, config: AgentConfig, local: bool
) -> ToolOutcome:
    """Run one tool call as an activity (or a local one); unknown names and failures become results."""
    if call.name not in config.tools:
        available = ", ".join(config.tools) or "none"
        message = f"unknown tool {call.name!r}; available tools: {available}"
        return ToolOutcome(ok=False, attempts=0, error=ToolError(type=UNKNOWN_TOOL, message=message))
    try:
        return await call_activity(RUN_TOOL, request, config=config, local=local)
    except ActivityError as err:
        if isinstance(err.cause, CancelledError):
            raise  # the run is being cancelled: not a tool failure
        return _failure_outcome(call, err, options_for(RUN_TOOL, config))
    except TimeoutError as err:
        # A local activity's timeout, as a replay raises it: not wrapped in an ActivityError.
        return _failure_outcome(call, err, options_for(RUN_TOOL, config))


Execute = Callable[[ToolCall, ToolCallRequest], Coroutine[None, None, ToolOutcome]]
"""Runs one call (a tool's activity, or an agent's child run)."""


class RoundEvents(Protocol):
    """What the run records of a round: each call's start and end, and its approval."""

    def started(self, call: ToolCall) -> None:
        """A call starts running."""

    def completed(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """A call has its outcome."""

    def approval_requested(self, call: ToolCall, pending: PendingApproval) -> None:
        """A call waits for approval."""

    def approval_decided(self, call: ToolCall, verdict: Verdict) -> None:
        """A waiting call was decided (or its deadline decided it)."""


class ToolRound:
    """The round in flight: its calls, their status (for the `state` query) and their outcomes."""

    def __init__(self) -> None:
        """No round in flight."""
        self.statuses: list[ToolCallStatus] = []
        self._calls: list[ToolCall] = []
        self._outcomes: list[ToolOutcome | None] = []
        self._running: dict[int, asyncio.Task[ToolOutcome]] = {}
        self.interrupted = False
        self._cancelling = False

    @property
    def in_flight(self) -> bool:
        """Whether a round is running (and has not been interrupted already)."""
        return bool(self._calls) and not self.interrupted

    def interrupt(self, cancel_tools: bool, spare: frozenset[str] = frozenset()) -> None:
        """Start no more calls of this round; calls awaiting approval end unrun.

        With `cancel_tools`, cancel the running ones too, except calls of the tools in
        `spare` (agents, which the run stops by cancelling their child runs).
        """
        self.interrupted = True
        if cancel_tools:
            self._cancelling = True
            for index, task in self._running.items():
                if self._calls[index].name not in spare:
                    task.cancel()

    async def run(
        self,
        calls: list[ToolCall],
        config: AgentConfig,
        request_for: Callable[[ToolCall], ToolCallRequest],
        execute: Execute,
        events: RoundEvents,
        approvals: ApprovalBook,
        marked: frozenset[str] = frozenset(),
    ) -> None:
        """Run every call, at most `config.tool_concurrency` at a time; `events` hears what happens.

        A call that needs approval (`approvals.needs`, `marked`: the tools the worker marks)
        waits for it first, without holding a concurrency slot; a denial is its outcome.
        """
        now = workflow.now()
        self.interrupted = self._cancelling = False
        self._calls = list(calls)
        self._outcomes = [None] * len(calls)
        self.statuses = [ToolCallStatus(id=call.id, name=call.name, started_at=now) for call in calls]
        gate = asyncio.Semaphore(config.tool_concurrency)

        async def one(index: int, call: ToolCall) -> None:
            status = self.statuses[index]
            note: str | None = None
            if approvals.needs(call, marked) and not self.interrupted:
                status.status = "awaiting_approval"
                events.approval_requested(call, approvals.ask(call))
                try:
                    verdict = await approvals.wait(call, lambda: self.interrupted)
                except asyncio.CancelledError:
                    decided = approvals.decided(call.id)  # decided in the activation that cancelled the run
                    if decided is not None:
                        events.approval_decided(call, Verdict(decided))
                    raise
                if verdict is not None:
                    events.approval_decided(call, verdict)
                    if verdict.outcome is not None:
                        self._done(index, call, verdict.outcome, events)
                        return
                    call, note = verdict.call or call, verdict.note
            async with gate:
                if self.interrupted:
                    self._outcomes[index] = interrupted_outcome(call, started=False)
                    status.status = "cancelled"
                    return
                status.status = "running"
                status.started_at = workflow.now()
                events.started(call)
                outcome = await self._execute(index, call, request_for(call), execute)
                if note is not None:
                    outcome = outcome.model_copy(update={"note": note})
                self._done(index, call, outcome, events)

        await asyncio.gather(*(one(index, call) for index, call in enumerate(calls)))

    def _done(self, index: int, call: ToolCall, outcome: ToolOutcome, events: RoundEvents) -> None:
        status = self.statuses[index]
        self._outcomes[index] = outcome
        status.status = "ok" if outcome.ok else "error"
        status.attempts = outcome.attempts
        status.duration_ms = int((workflow.now() - status.started_at).total_seconds() * 1000)
        status.agent_workflow_id = outcome.agent_workflow_id or status.agent_workflow_id
        events.completed(call, outcome)

    def started_agent(self, call_id: str, workflow_id: str) -> None:
        """A call of the round runs as a child run (shown in `state`)."""
        for status in self.statuses:
            if status.id == call_id:
                status.agent_workflow_id = workflow_id

    async def _execute(
        self, index: int, call: ToolCall, request: ToolCallRequest, execute: Execute
    ) -> ToolOutcome:
        """One call in a task of its own, so an interrupt can cancel it alone."""
        task = asyncio.create_task(execute(call, request))
        self._running[index] = task
        try:
            return await task
        except (asyncio.CancelledError, ActivityError) as err:
            if not cut_short(err, self._cancelling):
                raise  # a failure, or the run itself is being cancelled
            return interrupted_outcome(call, started=True)
        finally:
            del self._running[index]

    def close(self) -> list[tuple[ToolCall, ToolOutcome]]:
        """The round's results in call order (unfinished calls get `cancelled`), and no round in flight."""
        results: list[tuple[ToolCall, ToolOutcome]] = []
        for index, call in enumerate(self._calls):  # the calls as the model made them (ids, order)
            outcome = self._outcomes[index]
            if outcome is None:
                outcome = cancelled_outcome(call)
                self.statuses[index].status = "cancelled"
            results.append((call, outcome))
        self._calls, self._outcomes, self.statuses = [], [], []
        return results
