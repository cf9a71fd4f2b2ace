"""Scripted run events for the AI SDK protocol's tests: what a request's run streams, without a run.

    from tests.aisdk_helpers import RunScript

    script = RunScript("req-1")
    events = [*script.llm_call(1, "Let me compute.", tool=("calculator", '{"expression": "17 * 23"}')), ...]

Each event is `(DeltaEvent | TraceItem, entries)` as the gateway's feed gives it: a trace event with
the thread messages the run gained by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import JsonValue

from contracts import TraceEvent
from contracts.run import TraceKind
from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry, MessagePayload, ToolCall

__all__ = ["CALL_ID", "RunEvent", "RunScript", "all_events", "answer_run", "approval_run", "failed_run"]

RunEvent = tuple[DeltaEvent | TraceItem, tuple[MessageEntry, ...]]
CALL_ID = "call-calc"
_AT = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class RunScript:
    """Builds one request's run events with increasing trace seqs."""

    request_id: str
    seq: int = 0
    entry_seq: int = 0
    batches: dict[int, int] = field(default_factory=dict[int, int])

    def trace(
        self, kind: TraceKind, *, call_id: str | None = None, data: dict[str, JsonValue] | None = None
    ) -> TraceItem:
        """The next trace event of `kind`."""
        self.seq += 1
        event = TraceEvent(
            seq=self.seq,
            at=_AT,
            kind=kind,
            iteration=0,
            request_id=self.request_id,
            run_id=f"{self.request_id}-run",
            call_id=call_id,
            data=data or {},
        )
        return TraceItem(event=event)

    def entry(self, payload: MessagePayload) -> MessageEntry:
        """The next thread message."""
        self.entry_seq += 1
        return MessageEntry(seq=self.entry_seq, at=_AT, payload=payload)

    def delta(self, call: int, text: str = "", thinking: str = "", attempt: int = 1) -> DeltaEvent:
        """The next delta batch of LLM call `call`."""
        batch = self.batches.get(call, 0)
        self.batches[call] = batch + 1
        return DeltaEvent(call=call, attempt=attempt, seq=batch, text=text, thinking=thinking)

    def llm_call(
        self,
        call: int,
        text: str,
        *,
        pieces: int = 3,
        tool: tuple[str, str] | None = None,
        streamed: int | None = None,
    ) -> list[RunEvent]:
        """LLM call `call` answering `text` in `pieces` deltas, optionally calling `tool` (id `CALL_ID`).

        `tool` is (name, raw arguments); `streamed`: only so many characters come as deltas.
        """
        out: list[RunEvent] = [(self.trace("llm_started", data={"call": call}), ())]
        shown = text if streamed is None else text[:streamed]
        size = max(1, -(-len(shown) // pieces))
        for start in range(0, len(shown), size):
            out.append((self.delta(call, shown[start : start + size]), ()))
        calls = [ToolCall(id=CALL_ID, name=tool[0], arguments=tool[1])] if tool else None
        message = self.entry(MessagePayload(role="assistant", content=text, tool_calls=calls))
        out.append((self.trace("llm_completed", data={"call": call}), (message,)))
        return out

    def tool_result(self, name: str, result: str, *, ok: bool = True) -> list[RunEvent]:
        """The tool call `CALL_ID` starting and ending with `result`."""
        started = self.trace("tool_started", call_id=CALL_ID, data={"name": name})
        message = self.entry(MessagePayload(role="tool", content=result, tool_call_id=CALL_ID, name=name))
        data: dict[str, JsonValue] = {"name": name, "ok": ok, "outcome": result}
        return [(started, ()), (self.trace("tool_completed", call_id=CALL_ID, data=data), (message,))]


def answer_run(request_id: str, answer: str = "Hello from the AI SDK stream.") -> list[RunEvent]:
    """A request answered in one streamed LLM call."""
    script = RunScript(request_id)
    return [
        (script.trace("request_started"), ()),
        *script.llm_call(1, answer),
        (script.trace("request_completed"), ()),
    ]


def approval_run(request_id: str, *, approved: bool = True) -> tuple[list[RunEvent], list[RunEvent]]:
    """A request whose tool call waits for approval: the events up to the wait, and those after it."""
    script = RunScript(request_id)
    before: list[RunEvent] = [
        (script.trace("request_started"), ()),
        *script.llm_call(1, "Let me compute that.", tool=("calculator", '{"expression": "17 * 23"}')),
        (script.trace("approval_requested", call_id=CALL_ID, data={"name": "calculator"}), ()),
    ]
    decided = script.trace(
        "approval_decided",
        call_id=CALL_ID,
        data={"name": "calculator", "approved": approved, "reason": None if approved else "not now"},
    )
    after: list[RunEvent] = [(decided, ())]
    if approved:
        after += script.tool_result("calculator", "391")
    else:
        after += script.tool_result("calculator", "denied: not now", ok=False)
    after += [*script.llm_call(2, "17 * 23 = 391." if approved else "I was not allowed to compute it.")]
    after.append((script.trace("request_completed"), ()))
    return before, after


def failed_run(request_id: str) -> list[RunEvent]:
    """A request whose run failed after streaming part of an answer."""
    script = RunScript(request_id)
    started: list[RunEvent] = [(script.trace("request_started"), ())]
    partial = [(script.trace("llm_started", data={"call": 1}), ()), (script.delta(1, "Half an"), ())]
    error: dict[str, JsonValue] = {"type": "timeout", "message": "the LLM call timed out"}
    return [*started, *partial, (script.trace("request_failed", data={"error": error}), ())]


def all_events(*runs: Sequence[RunEvent]) -> list[RunEvent]:
    """The events of `runs`, one after another."""
    return [event for run in runs for event in run]
