"""Recorded tool results: a run given some answers those tool calls with them, calling no tool.

An evaluation's case made from a recorded request (`contracts.evals`) carries the results its
tools gave then, so a new version of the agent answers from the same facts. A call takes the
first unused result of its tool whose `arguments` equal the call's (parsed JSON), else the first
unused one of its tool recorded without `arguments`; a call none matches runs its tool as usual.
A run without recorded results (every run before this field existed) never gets here with any,
so its commands are unchanged: no `workflow.patched` is needed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contracts.errors import TOOL_ERROR
from contracts.tools import RecordedToolResult, ToolError, ToolOutcome
from conversation import ToolCall


class RecordedTools:
    """The run's recorded tool results, each used once."""

    def __init__(self, recorded: Sequence[RecordedToolResult]) -> None:
        """Hold `recorded` (in order)."""
        self._left = list(recorded)

    def take(self, call: ToolCall) -> ToolOutcome | None:
        """The recorded outcome for `call` (used up), or None when none matches."""
        if not self._left:
            return None
        try:
            arguments: object = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        same = [r for r in self._left if r.name == call.name]
        found = next((r for r in same if r.arguments is not None and r.arguments == arguments), None)
        found = found or next((r for r in same if r.arguments is None), None)
        if found is None:
            return None
        self._left.remove(found)
        if found.ok:
            return ToolOutcome(ok=True, result=found.result, attempts=0)
        message = found.error or "the recorded call failed"
        return ToolOutcome(ok=False, attempts=0, error=ToolError(type=TOOL_ERROR, message=message))
