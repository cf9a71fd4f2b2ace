"""Refusing unusable input by name: the `ApplicationError` of a `PayloadProblem`, and start input.

Validators and queries refuse with the problem's code (`invalid_input` or
`payload_too_large`). A workflow's start input is decoded in `__init__` with
`decode_start`: input that does not decode leaves a placeholder to build the
components from and the problem, which fails the workflow once (and refuses every
Update that would act on it) instead of failing workflow tasks over and over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from contracts.decoding import PayloadProblem, decode_args

M = TypeVar("M", bound=BaseModel)


def refusal(problem: PayloadProblem) -> ApplicationError:
    """The named, non-retryable `ApplicationError` for `problem`."""
    return ApplicationError(problem.message, type=problem.code, non_retryable=True)


def decode_or_refuse(args: Sequence[Any], model: type[M], what: str) -> M:
    """The one argument of `args` as a `model`, or the named `ApplicationError` (validators, queries)."""
    try:
        return decode_args(args, model, what)
    except PayloadProblem as problem:
        raise refusal(problem) from None


def decode_start(
    args: Sequence[Any], model: type[M], what: str, placeholder: M
) -> tuple[M, PayloadProblem | None]:
    """The start input, or `placeholder` and the problem that fails the workflow at once."""
    try:
        return decode_args(args, model, what, required=True), None
    except PayloadProblem as problem:
        return placeholder, problem
