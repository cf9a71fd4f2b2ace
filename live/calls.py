"""What the LLM activity and an interrupt exchange with the live channel about one LLM call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LiveDelta:
    """One delta batch as the LLM activity publishes it: the item, and what it adds to the call's text."""

    call: int
    attempt: int
    item: bytes
    """The `DeltaEvent`'s JSON."""
    text: str
    """Its text (folded into the call's partial answer, which `LiveChannel.cut_call` returns)."""


@dataclass(frozen=True, slots=True)
class CutCall:
    """What one LLM call had published when it was cut: its latest attempt and that attempt's text."""

    attempt: int
    text: str
