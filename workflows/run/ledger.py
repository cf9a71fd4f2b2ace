"""Where a run stands: status, iteration, usage, the outcome, and a cancel once accepted.

One owner for the run's progress and outcome; `outcome()` is the same model the
`state` query, the `RunResult` and a session's request record carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass
class RunLedger:
    """The run's counters and outcome."""

    max_iterations: int
    status: RunStatus = "running"
    iteration: int = 0
    llm_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    termination: TerminationReason | None = None
    error: RunError | None = None
    answer_seq: int | None = None
    cancel_reason: str | None = None

    @property
    def cancelling(self) -> bool:
        """Whether a cancel was accepted and the run has not ended yet."""
        return self.status == "running" and self.cancel_reason is not None

    def outcome(self) -> Outcome:
        """The outcome so far (or the final one)."""
        return Outcome(
            status=self.status,
            termination_reason=self.termination,
            error=self.error,
            usage=self.usage,
            iterations=self.iteration,
            answer_seq=self.answer_seq,
        )

    def accept_cancel(self, reason: str | None) -> Ack:
        """Accept a cancel (`accepted`), or say why not: the run already ended or is already cancelling."""
        if self.status != "running":
            return Ack.rejected(NOT_RUNNING, f"the run already finished ({self.status})")
        if self.cancel_reason is not None:
            return Ack.rejected(NOT_RUNNING, "the run is already being cancelled")
        self.cancel_reason = reason or ""
        return Ack(status="accepted", message="the run is being cancelled")

    def check_cancel(self) -> None:
        """Raise `RunCancelledError` if a cancel was accepted (the loop calls this after every await)."""
        if self.cancelling:
            raise RunCancelledError

    def cancel_message(self) -> str:
        """The error message of a cancelled run."""
        if self.cancel_reason is None:
            return "the workflow was cancelled"
        return f"cancelled: {self.cancel_reason}" if self.cancel_reason else "cancelled"

    def finish(
        self,
        status: RunStatus,
        *,
        reason: TerminationReason | None = None,
        error: RunError | None = None,
        answer_seq: int | None = None,
    ) -> None:
        """Record the terminal state."""
        self.status = status
        self.termination = reason or ("cancelled" if status == "cancelled" else "error")
        self.error = error
        self.answer_seq = answer_seq
