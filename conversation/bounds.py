"""Size limits of the conversation's own inputs (context ops, contexts), and pydantic helpers for limits.

`contracts.limits` re-exports these next to the product's other limits (the README
table lists them all). A text over its limit fails validation with pydantic's
`string_too_long`, a list with `too_long`, a structured value with
`payload_too_large`; `contracts.decoding` turns the three into the
`payload_too_large` error code.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import AfterValidator, StringConstraints
from pydantic_core import PydanticCustomError, to_json

KIB: Final = 1024
MIB: Final = 1024 * KIB

MAX_ID_CHARS: Final = 200
"""Ids chosen by callers: `request_id`, `op_id`, `input_id`, `context_ref`, `expected_request_id`."""
MAX_CONTEXT_BYTES: Final = 8 * MIB
"""A replace op's `result_context`, a run's starting `context`, a snapshot's context."""
MAX_META_BYTES: Final = 16 * KIB
"""A context op's `meta`."""

SIZE_ERRORS: Final = frozenset({"string_too_long", "too_long", "payload_too_large"})
"""Pydantic error types that mean "over a size limit"."""


def json_size_at_most(limit: int, what: str) -> AfterValidator:
    """A validator rejecting values whose JSON form is longer than `limit` bytes."""

    def check(value: Any) -> Any:
        size = len(to_json(value))
        if size > limit:
            raise PydanticCustomError(
                "payload_too_large",
                "{what} is {size} bytes of JSON; the limit is {limit}",
                {"what": what, "size": size, "limit": limit},
            )
        return value

    return AfterValidator(check)


Id = Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)]
"""An id chosen by a caller (request, op, input, lane)."""
