"""Decoding the arguments of a signal, Update or workflow start into a payload model, whatever arrives.

Handlers take `*args` (so zero, one or two arguments never fail a workflow task) and
decode with `decode_args`: a wrong count, a null, wrong JSON types, out-of-range
numbers or oversized values become a `PayloadProblem` with a code of
`contracts.errors` (`invalid_input` or `payload_too_large`) and a sentence naming the
field, which handlers turn into a rejection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from contracts.bounds import SIZE_ERRORS
from contracts.errors import INVALID_INPUT, PAYLOAD_TOO_LARGE

M = TypeVar("M", bound=BaseModel)


class PayloadProblem(Exception):
    """A payload that cannot be used; `code` is `invalid_input` or `payload_too_large`."""

    def __init__(self, code: str, message: str) -> None:
        """Create the problem."""
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Undecodable:
    """What the product's payload converter hands a handler for a payload that is not JSON it can read.

    The SDK would otherwise fail the Update with an unnamed "Failed decoding arguments"
    (for example on a lone UTF-16 surrogate, which no JSON encoder of ours could write
    back); `decode_args` turns it into `invalid_input`.
    """

    def __init__(self, reason: str) -> None:
        """Remember why the payload could not be read."""
        self.reason = reason


def decode_args(args: Sequence[Any], model: type[M], what: str, *, required: bool = False) -> M:
    """The one argument of `args` as a `model`; no argument (or null) means the model's defaults.

    Args:
        args: the handler's positional arguments, as the SDK decoded them (plain JSON values).
        model: the payload model.
        what: the handler's name, for messages.
        required: whether a missing or null argument is a problem (else: defaults).

    Raises:
        PayloadProblem: the arguments are not one valid `model`.
    """
    if len(args) > 1:
        raise PayloadProblem(INVALID_INPUT, f"{what} takes one argument, got {len(args)}")
    raw = args[0] if args else None
    if isinstance(raw, Undecodable):
        raise PayloadProblem(INVALID_INPUT, f"{what}: the payload is not readable JSON ({raw.reason})")
    if raw is None:
        if required:
            raise PayloadProblem(INVALID_INPUT, f"{what} needs an argument ({model.__name__})")
        raw = {}
    if isinstance(raw, model):
        return raw
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise problem_of(err, what) from None


def problem_of(err: ValidationError, what: str) -> PayloadProblem:
    """The `PayloadProblem` a validation error stands for (size problems first)."""
    errors = err.errors(include_url=False, include_input=False)
    sized = [e for e in errors if e["type"] in SIZE_ERRORS]
    first = (sized or errors)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(payload)"
    code = PAYLOAD_TOO_LARGE if sized else INVALID_INPUT
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return PayloadProblem(code, f"{what}: {where}: {first['msg']}{more}")
