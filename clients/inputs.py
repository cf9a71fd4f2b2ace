"""Building the payloads of the typed client, checked before anything is sent.

Every builder validates with the payload model the workflow decodes with (so the named
limits of `contracts.limits` hold here exactly as in the Update validators), adds the
checks that need no workflow state (blank content or query, an invalid context op), and
raises `RejectedError` with the code the workflow would have used. The CLI calls them
before it connects, so bad input is reported without a server. Values are re-validated
from their dumps: a model changed after it was built cannot carry oversized fields.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from clients.errors import RejectedError, invalid_payload
from contracts import AgentConfig, CancelInput, RunInput, SteerInput, ThreadQuery
from contracts.approval import ApproveInput
from contracts.errors import BLANK_CONTENT, INVALID_INPUT, INVALID_OP
from contracts.session import RequestRef
from contracts.thread import DEFAULT_PAGE_ENTRIES
from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    InvalidContextOpError,
    validate_operation,
)
from conversation.thread import OperationReason
from settings.webhook_policy import WebhookPolicy

M = TypeVar("M", bound=BaseModel)


def checked(model: type[M], data: Mapping[str, object], what: str) -> M:
    """`data` as a `model`, or the `RejectedError` the workflow's validator would give."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as error:
        raise invalid_payload(error, what) from None


def dumped(value: BaseModel | None) -> object:
    """A model's dump (None stays None), to be validated again as part of a payload."""
    return value.model_dump() if value is not None else None


def not_blank(text: str, field: str, code: str = INVALID_INPUT) -> None:
    """Refuse blank text as the workflow would (`code`, naming `field`)."""
    if not text.strip():
        raise RejectedError(code, f"{field} must not be blank")


def new_id() -> str:
    """A fresh id for a request or a context op."""
    return uuid.uuid4().hex


# ---- runs and asks -------------------------------------------------------------------------


def run_input(
    query: str,
    config: AgentConfig,
    *,
    request_id: str | None = None,
    context: Context | None = None,
    context_ref: str = DEFAULT_CONTEXT_REF,
) -> RunInput:
    """The input of a new run."""
    run = checked(
        RunInput,
        {
            "query": query,
            "request_id": request_id,
            "config": config.model_dump(),
            "context": dumped(context),
            "context_ref": context_ref,
        },
        "ReActRun input",
    )
    not_blank(run.query, "query")
    not_blank(run.config.model, "config.model")
    not_blank(run.context_ref, "context_ref")
    return run


def check_webhook_url(url: object, field: str = "webhook_url") -> None:
    """Refuse a webhook URL the deployment's allow-list refuses (`settings.webhook_policy`), or too long.

    Every place a webhook URL is set calls it, before the input's own validation (so a URL
    over `MAX_WEBHOOK_URL_CHARS` is `invalid_input` naming the field, not `payload_too_large`):
    an ask's, a session's default, an agent's config (`config.webhook_url`), a schedule's.
    Anything but a string is left to that validation.

    Raises:
        RejectedError: `invalid_input` naming `field` and why.
    """
    if not isinstance(url, str):
        return
    problem = WebhookPolicy.from_env().url_problem(url)
    if problem is not None:
        raise RejectedError(INVALID_INPUT, f"{field}: {problem}")


def request_ref(request_id: str) -> RequestRef:
    """Names a request of a session."""
    return checked(RequestRef, {"request_id": request_id}, "await_result")


# ---- controls ------------------------------------------------------------------------------


def steer_input(
    content: str | SteerInput,
    *,
    expected_request_id: str | None = None,
    source: str | None = None,
    refs: Mapping[str, str] | None = None,
    what: str = "steer",
    mode: str = "queue",
    cancel_tools: bool = False,
) -> SteerInput:
    """Steer or inject input (`what` names the control in messages; `mode` and `cancel_tools`: steer only).

    `content` may be an input built before (checked again, the keyword arguments but `what` unused).
    """
    data = (
        content.model_dump()
        if isinstance(content, SteerInput)
        else {
            "content": content,
            "expected_request_id": expected_request_id,
            "source": source,
            "refs": dict(refs or {}),
            "mode": mode,
            "cancel_tools": cancel_tools,
        }
    )
    payload = checked(SteerInput, data, what)
    not_blank(payload.content, "content", BLANK_CONTENT)
    return payload


def cancel_input(reason: str | CancelInput | None = None) -> CancelInput:
    """A cancel (`reason` may be a cancel built before: checked again)."""
    data = reason.model_dump() if isinstance(reason, CancelInput) else {"reason": reason}
    return checked(CancelInput, data, "cancel")


def approve_input(
    call_id: str | ApproveInput,
    *,
    approved: bool = True,
    reason: str | None = None,
    arguments: Mapping[str, JsonValue] | None = None,
    approver: str | None = None,
) -> ApproveInput:
    """A decision on a tool call awaiting approval (`arguments`: edited ones, approving only).

    `call_id` may be a decision built before (checked again, the keyword arguments unused).
    """
    edited = dict(arguments) if arguments is not None else None
    data = (
        call_id.model_dump()
        if isinstance(call_id, ApproveInput)
        else {
            "call_id": call_id,
            "approved": approved,
            "reason": reason,
            "approver": approver,
            "arguments": edited,
        }
    )
    payload = checked(ApproveInput, data, "approve")
    not_blank(payload.call_id, "call_id")
    return payload


def context_op(request: ContextModifyInput) -> ContextModifyInput:
    """A context op checked as the workflow checks it (`invalid_op` with the reason)."""
    return _op(request.model_dump())


def _op(data: Mapping[str, object]) -> ContextModifyInput:
    request = checked(ContextModifyInput, data, "context_modify")
    try:
        validate_operation(request, DEFAULT_CONTEXT_REF)
    except InvalidContextOpError as error:
        raise RejectedError(INVALID_OP, error.reason) from None
    return request


def replace_op(
    context: Context,
    *,
    context_ref: str | None = None,
    op_id: str | None = None,
    reason: OperationReason = "manual",
    base_seq: int | None = None,
    meta: Mapping[str, JsonValue] | None = None,
) -> ContextModifyInput:
    """A `replace` of a lane's context (default: the active lane)."""
    operation = {
        "type": "replace",
        "reason": reason,
        "result_context": context.model_dump(),
        "base_seq": base_seq,
        "meta": dict(meta or {}),
    }
    return _op({"op_id": op_id or new_id(), "context_ref": context_ref, "operation": operation})


def switch_op(
    context_ref: str, *, op_id: str | None = None, reason: OperationReason = "manual"
) -> ContextModifyInput:
    """A `switch` to the lane `context_ref`."""
    operation = {"type": "switch", "reason": reason}
    return _op({"op_id": op_id or new_id(), "context_ref": context_ref, "operation": operation})


# ---- queries and export --------------------------------------------------------------------


def thread_query(since_seq: int = 0, limit: int = DEFAULT_PAGE_ENTRIES) -> ThreadQuery:
    """A page request of the `thread` query."""
    return checked(ThreadQuery, {"since_seq": since_seq, "limit": limit}, "thread")
