"""What an AG-UI `RunAgentInput` asks of the gateway, checked before anything reaches a workflow.

The last user message is the ask (text only); `forwardedProps` may carry `on_busy`, `mode` (the
steer mode, `queue` or `interrupt`) and `expected_last_request`; `resume` entries decide tool
calls awaiting approval (interrupt id = call id; payload `{"approved": bool, "reason"?: str,
"arguments"?: object}`; a `cancelled` entry denies). Everything else a client sends (tools,
context, state, model settings) is ignored: the gateway's agent config decides those.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Annotated

from ag_ui.core import RunAgentInput, TextPart, UserMessage
from pydantic import BaseModel, ConfigDict, JsonValue, StrictBool, StringConstraints, ValidationError

from contracts.session import OnBusy
from contracts.signals import SteerMode
from gateway.errors import GatewayError

__all__ = [
    "AskProps",
    "Decision",
    "ask_props",
    "decisions",
    "last_user_text",
    "parse_run_input",
    "request_id_for",
]

_REQUEST_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
MAX_REASON_CHARS = 4_000


@dataclass(frozen=True)
class AskProps:
    """The session's busy policy for this ask, from `forwardedProps`."""

    on_busy: OnBusy = "reject"
    mode: SteerMode = "queue"
    expected_last_request: str | None = None


@dataclass(frozen=True)
class Decision:
    """One resume entry: approve or deny a call (with a reason, or edited arguments)."""

    call_id: str
    approved: bool
    reason: str | None = None
    arguments: dict[str, JsonValue] | None = None


def parse_run_input(raw: object) -> RunAgentInput:
    """The request body as a `RunAgentInput`.

    Raises:
        GatewayError: 400 `invalid_input` naming the first problem.
    """
    try:
        return RunAgentInput.model_validate(raw)
    except ValidationError as err:
        raise GatewayError.invalid_input(f"not an AG-UI RunAgentInput: {_first(err)}") from None


def request_id_for(run_id: str) -> str:
    """The session request id of an AG-UI run id (the run id itself when it is a plain id)."""
    if _REQUEST_ID.match(run_id):
        return run_id
    return "r-" + hashlib.sha256(run_id.encode()).hexdigest()[:32]


def last_user_text(run_input: RunAgentInput) -> str:
    """The text of the last user message.

    Raises:
        GatewayError: 400 `invalid_input` when there is none, or it has parts other than text.
    """
    message = next((m for m in reversed(run_input.messages) if isinstance(m, UserMessage)), None)
    if message is None:
        raise GatewayError.invalid_input("the run has no user message to answer (and no resume entries)")
    if isinstance(message.content, str):
        return message.content
    if not all(isinstance(part, TextPart) for part in message.content):
        raise GatewayError.invalid_input("this agent takes text only: the user message has other parts")
    return "".join(part.text for part in message.content if isinstance(part, TextPart))


def ask_props(run_input: RunAgentInput) -> AskProps:
    """`on_busy`, `mode` and `expected_last_request` from `forwardedProps` (other keys are ignored).

    Raises:
        GatewayError: 400 `invalid_input` for a value outside its choices.
    """
    try:
        props = _Props.model_validate(run_input.forwarded_props or {})
    except ValidationError as err:
        raise GatewayError.invalid_input(f"forwardedProps: {_first(err)}") from None
    return AskProps(props.on_busy, props.mode, props.expected_last_request)


def decisions(run_input: RunAgentInput) -> list[Decision]:
    """The resume entries as decisions.

    Raises:
        GatewayError: 400 `invalid_input` for a payload that is not `{"approved": bool, ...}`.
    """
    found: list[Decision] = []
    for entry in run_input.resume or []:
        if entry.status == "cancelled":
            found.append(Decision(entry.interrupt_id, approved=False, reason="cancelled by the user"))
            continue
        try:
            payload = _ResumePayload.model_validate(entry.payload)
        except ValidationError as err:
            shape = '{"approved": true|false, "reason"?, "arguments"?}'
            where = f"resume entry {entry.interrupt_id!r}"
            raise GatewayError.invalid_input(f"{where}: the payload must be {shape}: {_first(err)}") from None
        found.append(Decision(entry.interrupt_id, payload.approved, payload.reason, payload.arguments))
    return found


class _Props(BaseModel):
    on_busy: OnBusy = "reject"
    mode: SteerMode = "queue"
    expected_last_request: Annotated[str, StringConstraints(pattern=_REQUEST_ID.pattern)] | None = None


class _ResumePayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    approved: StrictBool
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON_CHARS)] | None = None
    arguments: dict[str, JsonValue] | None = None


def _first(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])
