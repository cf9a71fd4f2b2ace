"""Where a run stands: status, iteration, usage, the outcome, and a cancel once accepted.

One owner for the run's progress and outcome; `outcome()` is the same model the
`state` query, the `RunResult` and a session's request record carry.
"""

from __future__ import annotations

from contracts import Ack, Outcome, RunError, RunStatus, TerminationReason, Usage
from contracts.errors import NOT_RUNNING


class RunCancelledError(Exception):
    """Raised inside the run's loop once a cancel has been accepted (checked after every await)."""


class RunFailedError(Exception):
    """A run-level failure (the run ends `failed`, the workflow still returns its result)."""

    def __init__(self, error_type: str, message: str) -> None:
        """Create the failure."""
        super().__init__(message)
        self.error = RunError(type=error_type, message=message)


class RunLedger:
    """The run's counters and outcome: read them freely, change them through these methods."""

    def __init__(self, max_iterations: int) -> None:
        """A running run that has made no call yet."""
        self._max_iterations = max_iterations
        self._status: RunStatus = "running"
        self._iteration = 0
        self._llm_calls = 0
        self._usage = Usage()
        self._termination: TerminationReason | None = None
        self._error: RunError | None = None
        self._answer_seq: int | None = None
        self._cancel_reason: str | None = None

    @property
    def max_iterations(self) -> int:
        """The config's iteration cap."""
        return self._max_iterations

    @property
    def status(self) -> RunStatus:
        """`running` until the terminal state is recorded (`finish`, `refuse_start`)."""
        return self._status

    @property
    def iteration(self) -> int:
        """The iterations begun (the current one while running)."""
        return self._iteration

    @property
    def llm_calls(self) -> int:
        """The LLM calls begun, interrupted ones included."""
        return self._llm_calls

    @property
    def usage(self) -> Usage:
        """The run's usage: its own LLM calls and those of the agents it called as tools."""
        return self._usage

    @property
    def termination(self) -> TerminationReason | None:
        """Why the run ended (None while running)."""
        return self._termination

    def count_iteration(self) -> None:
        """An iteration begins."""
        self._iteration += 1

    def count_llm_call(self) -> int:
        """An LLM call begins; its index in the run (0 for the first)."""
        self._llm_calls += 1
        return self._llm_calls - 1

    def add_usage(self, usage: Usage) -> None:
        """Count an LLM call's usage, or an agent's (a child run's)."""
        self._usage = self._usage.plus(usage)

    def refuse_start(self) -> None:
        """The start input was unusable: the run is `failed` from the start (controls: `not_running`)."""
        self._status = "failed"

    @property
    def cancelling(self) -> bool:
        """Whether a cancel was accepted and the run has not ended yet."""
        return self._status == "running" and self._cancel_reason is not None

    def outcome(self) -> Outcome:
        """The outcome so far (or the final one)."""
        return Outcome(
            status=self._status,
            termination_reason=self._termination,
            error=self._error,
            usage=self._usage,
            iterations=self._iteration,
            answer_seq=self._answer_seq,
        )

    def accept_cancel(self, reason: str | None) -> Ack:
        """Accept a cancel (`accepted`), or say why not: the run already ended or is already cancelling."""
        if self._status != "running":
            return Ack.rejected(NOT_RUNNING, f"the run already finished ({self._status})")
        if self._cancel_reason is not None:
            return Ack.rejected(NOT_RUNNING, "the run is already being cancelled")
        self._cancel_reason = reason or ""
        return Ack(status="accepted", message="the run is being cancelled")

    def check_cancel(self) -> None:
        """Raise `RunCancelledError` if a cancel was accepted (the loop calls this after every await)."""
        if self.cancelling:
            raise RunCancelledError

    def cancel_message(self) -> str:
        """The error message of a cancelled run."""
        if self._cancel_reason is None:
            return "the workflow was cancelled"
        return f"cancelled: {self._cancel_reason}" if self._cancel_reason else "cancelled"

    def finish(
        self,
        status: RunStatus,
        *,
        reason: TerminationReason | None = None,
        error: RunError | None = None,
        answer_seq: int | None = None,
    ) -> None:
        """Record the terminal state."""
        self._status = status
        self._termination = reason or ("cancelled" if status == "cancelled" else "error")
        self._error = error
        self._answer_seq = answer_seq
