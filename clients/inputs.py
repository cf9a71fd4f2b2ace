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
from contracts import AgentConfig, CancelInput, ModelSettings, RunInput, SteerInput, ThreadQuery
from contracts.approval import ApproveInput
from contracts.compaction import CompactInput
from contracts.errors import BLANK_CONTENT, INVALID_INPUT, INVALID_OP
from contracts.session import AskInput, ContextQuery, ExportInput, RequestRef, SessionInput
from contracts.session_config import ModelInput, SystemPromptInput, ToolContextInput, ToolNameInput
from contracts.thread import DEFAULT_PAGE_ENTRIES
from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    ContextPolicy,
    InvalidContextOpError,
    validate_operation,
)
from conversation.thread import OperationReason

M = TypeVar("M", bound=BaseModel)


def checked(model: type[M], data: Mapping[str, object], what: str) -> M:
    """`data` as a `model`, or the `RejectedError` the workflow's validator would give."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as error:
        raise invalid_payload(error, what) from None


def _dumped(value: BaseModel | None) -> object:
    return value.model_dump() if value is not None else None


def _not_blank(text: str, field: str, code: str = INVALID_INPUT) -> None:
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
            "context": _dumped(context),
            "context_ref": context_ref,
        },
        "ReActRun input",
    )
    _not_blank(run.query, "query")
    _not_blank(run.config.model, "config.model")
    _not_blank(run.context_ref, "context_ref")
    return run


def session_input(
    agent_id: str,
    config: AgentConfig,
    *,
    context_policy: ContextPolicy | None = None,
    snapshot: str | None = None,
) -> SessionInput:
    """The input that starts a session (used only when the session does not run yet)."""
    session = checked(
        SessionInput,
        {
            "agent_id": agent_id,
            "config": config.model_dump(),
            "context_policy": _dumped(context_policy),
            "snapshot": snapshot,
        },
        "AgentSession input",
    )
    _not_blank(session.config.model, "config.model")
    return session


def ask_input(
    query: str,
    *,
    request_id: str | None = None,
    overrides: Mapping[str, JsonValue] | None = None,
    context_policy: ContextPolicy | None = None,
    on_busy: str = "reject",
    expected_last_request: str | None = None,
) -> AskInput:
    """An ask; without `request_id` the client chooses one, so a retried ask is answered, not run twice."""
    ask = checked(
        AskInput,
        {
            "query": query,
            "request_id": request_id or new_id(),
            "overrides": dict(overrides or {}),
            "context_policy": _dumped(context_policy),
            "on_busy": on_busy,
            "expected_last_request": expected_last_request,
        },
        "ask",
    )
    _not_blank(ask.query, "query")
    return ask


def request_ref(request_id: str) -> RequestRef:
    """Names a request of a session."""
    return checked(RequestRef, {"request_id": request_id}, "await_result")


# ---- controls ------------------------------------------------------------------------------


def steer_input(
    content: str,
    *,
    expected_request_id: str | None = None,
    source: str | None = None,
    refs: Mapping[str, str] | None = None,
    what: str = "steer",
    mode: str = "queue",
    cancel_tools: bool = False,
) -> SteerInput:
    """Steer or inject input (`what` names the control in messages; `mode` and `cancel_tools`: steer only)."""
    payload = checked(
        SteerInput,
        {
            "content": content,
            "expected_request_id": expected_request_id,
            "source": source,
            "refs": dict(refs or {}),
            "mode": mode,
            "cancel_tools": cancel_tools,
        },
        what,
    )
    _not_blank(payload.content, "content", BLANK_CONTENT)
    return payload


def cancel_input(reason: str | None = None) -> CancelInput:
    """A cancel."""
    return checked(CancelInput, {"reason": reason}, "cancel")


def approve_input(
    call_id: str,
    *,
    approved: bool = True,
    reason: str | None = None,
    arguments: Mapping[str, JsonValue] | None = None,
    approver: str | None = None,
) -> ApproveInput:
    """A decision on a tool call awaiting approval (`arguments`: edited ones, approving only)."""
    edited = dict(arguments) if arguments is not None else None
    data = {"call_id": call_id, "approved": approved, "reason": reason, "approver": approver}
    payload = checked(ApproveInput, {**data, "arguments": edited}, "approve")
    _not_blank(payload.call_id, "call_id")
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


def compact_input(op_id: str | None = None, model: str | None = None) -> CompactInput:
    """A compaction of a session's active lane."""
    return checked(CompactInput, {"op_id": op_id, "model": model}, "compact")


def system_prompt_input(system_prompt: str | None) -> SystemPromptInput:
    """`set_system_prompt` (None clears the prompt)."""
    return checked(SystemPromptInput, {"system_prompt": system_prompt}, "set_system_prompt")


def tool_name_input(name: str, what: str) -> ToolNameInput:
    """`register_tool` / `unregister_tool`."""
    payload = checked(ToolNameInput, {"name": name}, what)
    _not_blank(payload.name, "name")
    return payload


def tool_context_input(tool_context: Mapping[str, JsonValue]) -> ToolContextInput:
    """`set_tool_context`."""
    return checked(ToolContextInput, {"tool_context": dict(tool_context)}, "set_tool_context")


def model_input(model: str, settings: ModelSettings | None = None) -> ModelInput:
    """`set_model`."""
    payload = checked(ModelInput, {"model": model, "model_settings": _dumped(settings)}, "set_model")
    _not_blank(payload.model, "model")
    return payload


# ---- queries and export --------------------------------------------------------------------


def thread_query(since_seq: int = 0, limit: int = DEFAULT_PAGE_ENTRIES) -> ThreadQuery:
    """A page request of the `thread` query."""
    return checked(ThreadQuery, {"since_seq": since_seq, "limit": limit}, "thread")


def context_query(context_ref: str | None) -> ContextQuery:
    """A lane of the session's `context` query (None: the active one)."""
    return checked(ContextQuery, {"context_ref": context_ref}, "context")


def export_input(context_ref: str | None = None, ttl_s: float | None = None) -> ExportInput:
    """An export of a lane (default: the active one), optionally with a lifetime."""
    return checked(ExportInput, {"context_ref": context_ref, "ttl_s": ttl_s}, "export")


# ---- what the Web UI shows for a started workflow ----------------------------------------------
