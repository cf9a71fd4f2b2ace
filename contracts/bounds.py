"""Pydantic building blocks for the named limits of `contracts.limits` (see `conversation.bounds`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from contracts.limits import MAX_REF_KEY_CHARS, MAX_REF_VALUE_CHARS, MAX_REFS
from conversation.bounds import SIZE_ERRORS, Id, json_size_at_most

__all__ = ["SIZE_ERRORS", "Id", "Refs", "Seconds", "bounded_refs", "json_size_at_most"]

Seconds = Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)]
"""A positive duration of at most a day."""


def bounded_refs(refs: dict[str, str]) -> dict[str, str]:
    """`refs`, if within `MAX_REFS` entries of keys ≤ `MAX_REF_KEY_CHARS` and values ≤ `MAX_REF_VALUE_CHARS`.

    Raises:
        PydanticCustomError: `payload_too_large`, naming the limit.
    """
    if len(refs) > MAX_REFS:
        raise PydanticCustomError(
            "payload_too_large",
            "refs has {n} entries; the limit is {limit}",
            {"n": len(refs), "limit": MAX_REFS},
        )
    for key, value in refs.items():
        if len(key) > MAX_REF_KEY_CHARS or len(value) > MAX_REF_VALUE_CHARS:
            raise PydanticCustomError(
                "payload_too_large",
                "a refs key is at most {k} characters and a value at most {v}",
                {"k": MAX_REF_KEY_CHARS, "v": MAX_REF_VALUE_CHARS},
            )
    return refs


Refs = Annotated[dict[str, str], AfterValidator(bounded_refs)]
"""String references carried with an input (a steer's, an ask's): bounded by `bounded_refs`."""
