"""The one fold of a run's deltas: the text of each LLM call, its newest attempt's only.

An LLM call that fails is retried by Temporal as a new attempt of the same activity: the retry
streams the call again from its start, with a higher `DeltaEvent.attempt`. So, for each call, a
batch of a higher attempt starts the call's text over, a batch of a lower one is stale (a
superseded attempt's late batch), and a batch of the same attempt is appended. The run (its
partial answer), the typed client (`clients.stream.TextAssembler`) and every gateway renderer
fold through `CallTexts`; only the live channel's Redis script writes the rule again (it runs in
Redis: `live.redis_channel`). Pure: no I/O, so the workflow can use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from contracts.stream import DeltaEvent

__all__ = ["CallText", "CallTexts", "Folded"]

Folded = Literal["stale", "started", "continued"]
"""What a batch did: dropped (an older attempt's), started its attempt (the call's first batch, or
a retry's: the text starts over), or continued the attempt."""


@dataclass
class CallText:
    """What one LLM call has produced so far, as streamed (its newest attempt only)."""

    call: int
    attempt: int
    text: str = ""
    thinking: str = ""
    tool_calls: dict[int, dict[str, str]] = field(default_factory=dict[int, dict[str, str]])
    """Tool calls by index: `id`, `name` and the `arguments` JSON text so far."""
    cut: bool = False
    """Whether text past the fold's `max_chars` was dropped."""


class CallTexts:
    """Folds `DeltaEvent`s into the text of each LLM call; the newest attempt of a call wins."""

    def __init__(self, max_chars: int | None = None) -> None:
        """Start empty; `max_chars`: keep at most this many characters of a call's text (None: all)."""
        self.calls: dict[int, CallText] = {}
        self._max_chars = max_chars

    def add(self, delta: DeltaEvent) -> Folded:
        """Fold one batch in (see the module docstring)."""
        known = self.calls.get(delta.call)
        if known is not None and delta.attempt < known.attempt:
            return "stale"
        folded: Folded = "continued"
        if known is None or delta.attempt > known.attempt:
            known = self.calls[delta.call] = CallText(delta.call, delta.attempt)
            folded = "started"
        text = delta.text
        if self._max_chars is not None:
            text = text[: max(0, self._max_chars - len(known.text))]
            known.cut = known.cut or len(text) < len(delta.text)
        known.text += text
        known.thinking += delta.thinking
        for piece in delta.tool_calls:
            call = known.tool_calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = piece.id or call["id"]
            call["name"] = piece.name or call["name"]
            call["arguments"] += piece.arguments
        return folded

    def text(self, call: int) -> str:
        """The text of call `call` so far ("" when none was streamed)."""
        known = self.calls.get(call)
        return known.text if known is not None else ""

    def attempt(self, call: int, default: int = 0) -> int:
        """The newest attempt of call `call` seen (`default` when none)."""
        known = self.calls.get(call)
        return known.attempt if known is not None else default

    def clear(self) -> None:
        """Forget every call."""
        self.calls.clear()
