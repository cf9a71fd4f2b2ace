"""Where a request stands, one model for every protocol: `RequestState` and its statuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from contracts import Usage
from contracts.approval import PendingApproval
from contracts.run import RunResult
from contracts.session import RequestRecord

__all__ = ["ENDED", "RequestState", "RequestStatus", "ended_state", "state_of"]

RequestStatus = Literal["queued", "running", "awaiting_approval", "completed", "failed", "cancelled"]
ENDED = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class RequestState:
    """Where a request stands (`status`), with what each status has to say."""

    request_id: str
    run_workflow_id: str
    status: RequestStatus
    query_preview: str = ""
    usage: Usage = field(default_factory=Usage)
    pending: tuple[PendingApproval, ...] = ()
    """The calls awaiting a decision (`awaiting_approval`), oldest first."""
    answer: str | None = None
    """The answer's text (`completed`)."""
    output: JsonValue | None = None
    """The structured output (`completed`, when the agent has one)."""
    error_code: str | None = None
    """Why it failed (`failed`, `cancelled`): a code of `contracts.errors`."""
    error_message: str | None = None
    agent_version: int | None = None
    """The version of the agent made at run time that ran it (None: a code profile's request)."""

    @property
    def ended(self) -> bool:
        """Whether the request has ended (completed, failed or cancelled)."""
        return self.status in ENDED


def ended_state(request_id: str, run_workflow_id: str, result: RunResult) -> RequestState:
    """The state of a request whose run ended with `result` (the run says so before its session does)."""
    outcome = result.outcome
    status: RequestStatus = outcome.status if outcome.status in ("completed", "cancelled") else "failed"
    error = outcome.error
    return RequestState(
        request_id=request_id,
        run_workflow_id=run_workflow_id,
        status=status,
        usage=outcome.usage,
        answer=result.answer if status == "completed" else None,
        output=result.output if status == "completed" else None,
        error_code=error.type if error is not None else None,
        error_message=error.message if error is not None else None,
    )


def state_of(record: RequestRecord, status: RequestStatus, **fields: object) -> RequestState:
    """`record`'s request at `status`, with `fields` (what that status has to say)."""
    return RequestState(
        request_id=record.request_id,
        run_workflow_id=record.run_workflow_id,
        status=status,
        query_preview=record.query_preview,
        usage=record.outcome.usage,
        agent_version=record.agent_version,
        **fields,  # pyright: ignore[reportArgumentType]
    )
