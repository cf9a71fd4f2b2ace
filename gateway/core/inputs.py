"""What every protocol's input is checked against, once: request ids, the busy policy, a decision.

- A request id (the idempotency key of an ask: an AG-UI `runId`, an A2A message id, part of an
  MCP handle or A2A task id) matches `REQUEST_ID_PATTERN`; an id a protocol gives that does not
  is hashed into one (`request_id_for`). Both live in `gateway.owners` with the thread id (the
  guard names a request's audit target with them too).
- `on_busy` is one of `OnBusy` (`reject` by default) and `mode` one of `SteerMode` (`queue` by
  default), as enums, whatever protocol carried them.
- A decision on a call awaiting approval is one model, `Decision`: `{"approved": bool,
  "reason"?: str, "arguments"?: object, "call_id"?: str}` (no other keys).
"""

from __future__ import annotations

from typing import Annotated, get_args

from pydantic import BaseModel, ConfigDict, JsonValue, StrictBool, StringConstraints, ValidationError

from contracts.session import OnBusy
from contracts.signals import SteerMode
from gateway.errors import GatewayError
from gateway.owners import REQUEST_ID_PATTERN, is_request_id, request_id_for

__all__ = [
    "DECISION_SHAPE",
    "MAX_REASON_CHARS",
    "REQUEST_ID_PATTERN",
    "Decision",
    "check_request_id",
    "first_problem",
    "is_request_id",
    "parse_decision",
    "parse_mode",
    "parse_on_busy",
    "request_id_for",
]

MAX_REASON_CHARS = 4_000
MAX_CALL_ID_CHARS = 200
DECISION_SHAPE = '{"approved": true|false, "reason"?: string, "arguments"?: object, "call_id"?: string}'
_ON_BUSY: tuple[str, ...] = get_args(OnBusy)
_MODES: tuple[str, ...] = get_args(SteerMode)


def check_request_id(value: object, what: str = "a request id") -> str:
    """`value`, if it is a request id.

    Raises:
        GatewayError: 400 `invalid_input` naming the pattern.
    """
    if not isinstance(value, str) or not is_request_id(value):
        raise GatewayError.invalid_input(f"{what} must match {REQUEST_ID_PATTERN.pattern}")
    return value


def parse_on_busy(value: object) -> OnBusy:
    """`value` as a busy policy (None: `reject`).

    Raises:
        GatewayError: 400 `invalid_input` naming the choices.
    """
    return _choice(value, "on_busy", _ON_BUSY, "reject")  # pyright: ignore[reportReturnType] - checked


def parse_mode(value: object) -> SteerMode:
    """`value` as a steer mode (None: `queue`).

    Raises:
        GatewayError: 400 `invalid_input` naming the choices.
    """
    return _choice(value, "mode", _MODES, "queue")  # pyright: ignore[reportReturnType] - checked


def _choice(value: object, field: str, choices: tuple[str, ...], default: str) -> str:
    """`value` if it is one of `choices` (None: `default`), else 400 naming `field` and the choices."""
    if value is None:
        return default
    if value not in choices:
        raise GatewayError.invalid_input(f"`{field}` must be one of {', '.join(choices)}")
    return value  # pyright: ignore[reportReturnType] - one of the strings of `choices`


class Decision(BaseModel):
    """A decision on a call awaiting approval: approve (maybe with edited `arguments`) or deny.

    `reason` is shown to the model; `call_id` names the call (default: the request's oldest one).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    approved: StrictBool
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON_CHARS)] | None = None
    arguments: dict[str, JsonValue] | None = None
    call_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CALL_ID_CHARS)] | None = None


def parse_decision(raw: object, where: str = "the decision") -> Decision:
    """`raw` as a `Decision`.

    Raises:
        GatewayError: 400 `invalid_input` naming the shape and the first problem.
    """
    try:
        return Decision.model_validate(raw)
    except ValidationError as err:
        raise GatewayError.invalid_input(f"{where} must be {DECISION_SHAPE}: {first_problem(err)}") from None


def first_problem(err: ValidationError) -> str:
    """The first problem a validation found, with where it is."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])
