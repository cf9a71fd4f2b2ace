"""What an AG-UI `RunAgentInput` asks of the gateway, checked before anything reaches a workflow.

The last user message is the ask (text only); `forwardedProps` may carry `on_busy`, `mode` (the
steer mode, `queue` or `interrupt`) and `expected_last_request`; `resume` entries decide tool
calls awaiting approval (interrupt id = call id; payload `{"approved": bool, "reason"?: str,
"arguments"?: object}`; a `cancelled` entry denies). Everything else a client sends (tools,
context, state, model settings) is ignored: the gateway's agent config decides those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ag_ui.core import RunAgentInput, TextPart, UserMessage
from pydantic import ValidationError

from contracts.session import OnBusy
from contracts.signals import SteerMode
from gateway.core import Decision, check_request_id, parse_decision, parse_mode, parse_on_busy
from gateway.core.inputs import first_problem
from gateway.errors import GatewayError

__all__ = ["AskProps", "ask_props", "decisions", "last_user_text", "parse_run_input"]


@dataclass(frozen=True)
class AskProps:
    """The session's busy policy for this ask, from `forwardedProps`."""

    on_busy: OnBusy = "reject"
    mode: SteerMode = "queue"
    expected_last_request: str | None = None


def parse_run_input(raw: object) -> RunAgentInput:
    """The request body as a `RunAgentInput`.

    Raises:
        GatewayError: 400 `invalid_input` naming the first problem.
    """
    try:
        return RunAgentInput.model_validate(raw)
    except ValidationError as err:
        raise GatewayError.invalid_input(f"not an AG-UI RunAgentInput: {first_problem(err)}") from None


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
    raw: object = run_input.forwarded_props or {}
    if not isinstance(raw, dict):
        raise GatewayError.invalid_input("forwardedProps must be an object")
    props = cast("dict[str, object]", raw)
    expected = props.get("expected_last_request")
    return AskProps(
        parse_on_busy(props.get("on_busy")),
        parse_mode(props.get("mode")),
        None if expected is None else check_request_id(expected, "expected_last_request"),
    )


def decisions(run_input: RunAgentInput) -> list[Decision]:
    """The resume entries as decisions (the interrupt id is the call id; `cancelled` denies).

    Raises:
        GatewayError: 400 `invalid_input` for a payload that is not `{"approved": bool, ...}`.
    """
    found: list[Decision] = []
    for entry in run_input.resume or []:
        if entry.status == "cancelled":
            found.append(Decision(approved=False, reason="cancelled by the user", call_id=entry.interrupt_id))
            continue
        decision = parse_decision(entry.payload, f"the payload of resume entry {entry.interrupt_id!r}")
        found.append(decision.model_copy(update={"call_id": entry.interrupt_id}))
    return found
