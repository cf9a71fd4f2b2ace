"""Human approval of tool calls: the `approve` control's payload and what a run shows while it waits.

A tool call needs approval when the worker registered its tool with
`requires_approval=True` (an MCP server's `approval_required`) or the agent config
lists it in `approval_required`. Such a call waits (the round's other calls go on)
until an `approve` decides it or `approval_timeout_s` passes (then
`approval_on_timeout` decides: `deny` by default). A denied call becomes a tool
result telling the model why (`denied`, `approval_timeout`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, JsonValue, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from contracts.agent import ApprovalTimeoutAction
from contracts.bounds import Id, json_size_at_most
from contracts.limits import MAX_APPROVER_CHARS, MAX_EDITED_ARGUMENTS_BYTES, MAX_REASON_CHARS

Reason = Annotated[str, StringConstraints(max_length=MAX_REASON_CHARS)]


class ApproveInput(BaseModel):
    """Payload of `approve` (signal and Update): decide one tool call that awaits approval.

    `approved` false denies it; `reason` is shown to the model either way. `arguments`
    (approving only) replaces the call's arguments; they must validate against the
    tool's schema, or the approval is refused (`invalid_arguments`) and the call keeps
    waiting. `approver` names who decided (recorded in the trace and, as the Update's
    input, in history). `approval_id` and `reply_to` are set by a session forwarding
    the decision to its run.
    """

    call_id: Id
    approved: bool = True
    reason: Reason | None = None
    arguments: (
        Annotated[dict[str, JsonValue], json_size_at_most(MAX_EDITED_ARGUMENTS_BYTES, "arguments")] | None
    ) = None
    approver: Annotated[str, StringConstraints(max_length=MAX_APPROVER_CHARS)] | None = None
    approval_id: Id | None = None
    reply_to: Id | None = None

    @model_validator(mode="after")
    def _edits_only_when_approving(self) -> ApproveInput:
        if self.arguments is not None and not self.approved:
            raise PydanticCustomError(
                "invalid_input", "arguments can only be edited when approving (approved: true)"
            )
        return self


class PendingApproval(BaseModel):
    """A tool call waiting for a decision (`RunState.pending_approvals`).

    `arguments` is the call's raw arguments text, cut at 4,000 characters
    (`arguments_truncated` then says so).
    """

    call_id: str
    name: str
    arguments: str
    arguments_truncated: bool = False
    requested_at: datetime
    deadline: datetime
    on_timeout: ApprovalTimeoutAction = "deny"


ApprovalVerdict = Literal["approved", "denied", "timed_out"]


class ApprovalDecision(BaseModel):
    """How a call's approval was decided (kept by the run; `approve` twice is `already_decided`)."""

    call_id: str
    verdict: ApprovalVerdict
    approved: bool
    approver: str | None = None
    reason: str | None = None
    edited: bool = False
    decided_at: datetime


class ArgumentsCheck(BaseModel):
    """Input of `check_tool_arguments`: edited arguments to validate against a tool's schema."""

    name: str
    arguments: dict[str, JsonValue]


class ArgumentsVerdict(BaseModel):
    """Answer of `check_tool_arguments`: `problem` None when the arguments fit the schema."""

    problem: str | None = None
    fields: list[str] = []
