"""Pydantic building blocks for the named limits of `contracts.limits` (see `conversation.bounds`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from conversation.bounds import SIZE_ERRORS, Id, json_size_at_most

__all__ = ["SIZE_ERRORS", "Id", "Seconds", "json_size_at_most"]

Seconds = Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)]
"""A positive duration of at most a day."""
