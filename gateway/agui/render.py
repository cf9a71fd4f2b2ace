"""One request's run, as AG-UI events with resumable positions (pure: no I/O).

A position is made of durable facts only, so any gateway renders the same positions for the same
run, whatever it has seen before: `(seq, part, chars)` where `seq` is a trace event's seq. Events
a trace event causes (a message's end, tool calls, a result, a state snapshot, the run's end) are
at `(seq, 0, k)`, k counting them; the text of LLM call `c` (attempt `a`) is at `(s, a, chars)`,
`s` being the seq of that call's `llm_started` and `chars` the message's length once the event is
applied (its start is at 0). The same text has the same positions whether it arrives as deltas or,
when the stream's log no longer holds them (the call has ended), from the run's thread at
`llm_completed`. The SSE id of an event is `<request id>:<seq>:<part>:<chars>`; resuming after
an id renders the request again and drops every event at or before it (trimming a text chunk that
straddles it), so nothing is sent twice and nothing is lost.

The events a stream sends before the run's own (RUN_STARTED, then what the session did with the
message: the CUSTOM `ask` or `approvals`) have positions of their own, just before the point the
stream starts from (`after`): RUN_STARTED at `opening(after, preamble)`, the preamble's events at
`after`, `after` + 1, ... (`preamble_position`). Every id of a stream is distinct, and an opening
position says which preamble followed it (`opened_with`), so a stream resumed right after
RUN_STARTED sends that preamble again, derived from the session's durable records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from contracts import TraceEvent
from contracts.call_texts import CallTexts
from contracts.run import CALL_END_KINDS, TERMINAL_KINDS
from contracts.stream import DeltaEvent
from conversation import MessageEntry
from gateway.errors import GatewayError
from gateway.feed.hub import HubItem

__all__ = [
    "DONE_CHARS",
    "PREAMBLES",
    "START",
    "Emitted",
    "Position",
    "RequestRenderer",
    "opened_with",
    "opening",
    "parse_event_id",
    "preamble_position",
]

_EVENT_ID = re.compile(
    r"^(?P<request>.{1,200}):(?P<seq>-?[0-9]{1,9}):(?P<part>[0-9]{1,6}):(?P<chars>-?[0-9]{1,12})$"
)


@dataclass(frozen=True, order=True)
class Position:
    """Where an event stands in its request's stream (see the module docstring)."""

    seq: int
    part: int = 0
    chars: int = 0

    def event_id(self, request_id: str) -> str:
        """The SSE id of an event at this position of request `request_id`."""
        return f"{request_id}:{self.seq}:{self.part}:{self.chars}"


START = Position(-1)
"""Before the request's first trace event (where a whole request's stream starts)."""
DONE_CHARS = 999_999_999
"""`Position(seq, 0, DONE_CHARS)`: everything trace event `seq` renders has been sent."""
PREAMBLES = ("ask", "steered", "approvals")
"""What a stream sends after RUN_STARTED, before the run's events: the CUSTOM `ask` of a new ask,
the `ask` of a steering one, the `approvals` of a resume. A stream re-attached from a request's
start sends none, and its RUN_STARTED has the id a new ask's has (the same durable facts); resuming
right after it sends the request's `ask` (derived again, `resumed`)."""


def opening(after: Position, preamble: str) -> Position:
    """Where RUN_STARTED of a stream from `after` with preamble `preamble` stands: just before `after`."""
    offset = PREAMBLES.index(preamble or "ask") + 1
    return Position(after.seq, after.part, after.chars - offset)


def preamble_position(after: Position, index: int) -> Position:
    """The position of the preamble's `index`-th event of a stream from `after`."""
    return Position(after.seq, after.part, after.chars + index)


def opened_with(position: Position) -> tuple[Position, str] | None:
    """(the stream's `after`, its preamble) when `position` is a RUN_STARTED's, else None."""
    for base in (0, DONE_CHARS):
        offset = base - position.chars
        if position.part == 0 and 1 <= offset <= len(PREAMBLES):
            return Position(position.seq, 0, base), PREAMBLES[offset - 1]
    return None


def parse_event_id(value: str) -> tuple[str, Position]:
    """(request id, position) of an SSE event id.

    Raises:
        GatewayError: 400 `invalid_input` for an id this gateway did not give.
    """
    match = _EVENT_ID.match(value.strip())
    if match is None:
        raise GatewayError.invalid_input("the event id is not one this gateway gave (Last-Event-ID / after)")
    position = Position(int(match["seq"]), int(match["part"]), int(match["chars"]))
    return match["request"], position


@dataclass(frozen=True)
class Emitted:
    """An AG-UI event and its position."""

    position: Position
    event: BaseEvent


@dataclass
class _OpenText:
    call: int
    attempt: int
    anchor: int
    message_id: str
    chars: int = 0


@dataclass
class RequestRenderer:
    """Folds one request's hub items into AG-UI events, dropping those at or before `after`."""

    request_id: str
    after: Position = START
    origin: int | None = None
    """Text of LLM calls started at or before this trace seq is not rendered (a steered ask's stream
    shows the running request from the steer on)."""
    seq: int = -1
    awaiting: str | None = None
    """The call id of the `approval_requested` just rendered (the caller decides whether to stop)."""
    ended: HubItem | None = None
    """The request's terminal item, once rendered."""
    answer: str = ""
    """The text of the newest LLM call that ended (the answer, once the request has ended)."""
    entries: list[MessageEntry] = field(default_factory=list[MessageEntry])
    """The request's thread messages seen so far (for MESSAGES_SNAPSHOT)."""
    _k: int = 0
    _open: _OpenText | None = None
    _ended_calls: set[int] = field(default_factory=set[int])
    _anchors: dict[int, int] = field(default_factory=dict[int, int])
    _texts: CallTexts = field(default_factory=CallTexts)

    def stamp(self, event: BaseEvent) -> Emitted | None:
        """`event` at the next position of the current trace event (None: at or before `after`)."""
        position = Position(self.seq, 0, self._k)
        self._k += 1
        return Emitted(position, event) if position > self.after else None

    def force(self, event: BaseEvent) -> Emitted:
        """`event` at the next position, even at or before `after` (an error the client must see)."""
        position = Position(max(self.seq, self.after.seq), 0, self._k)
        self._k += 1
        return Emitted(position, event)

    def feed(self, item: HubItem) -> list[Emitted]:
        """The events `item` renders to (after `after` only)."""
        self.awaiting = None
        self.entries.extend(item.entries)
        if isinstance(item.event, DeltaEvent):
            return self._delta(item.event)
        return self._trace(item.event.event, item)

    # ---- text ------------------------------------------------------------------------------

    def _message_id(self, call: int, attempt: int) -> str:
        suffix = "" if attempt == 1 else f"-a{attempt}"
        return f"{self.request_id}-c{call}{suffix}"

    def _delta(self, delta: DeltaEvent) -> list[Emitted]:
        if not delta.text or delta.call in self._ended_calls or self._before_origin(delta.call):
            return []
        out: list[Emitted] = []
        current = self._open
        if self._texts.add(delta) == "stale":
            return []  # a superseded attempt's late deltas
        if current is None or current.call != delta.call or current.attempt != delta.attempt:
            if current is not None:  # a retry starts over: close what the failed attempt wrote
                out += self._at(Position(current.anchor, delta.attempt, -1), self._end(current))
            out += self._open_text(delta.call, delta.attempt)
        return out + self._text(delta.text)

    def _before_origin(self, call: int) -> bool:
        return self.origin is not None and self._anchors.get(call, self.seq) <= self.origin

    def _open_text(self, call: int, attempt: int) -> list[Emitted]:
        anchor = self._anchors.get(call, self.seq)
        opened = self._open = _OpenText(call, attempt, anchor, self._message_id(call, attempt))
        start = TextMessageStartEvent(message_id=opened.message_id, role="assistant")
        return self._at(Position(anchor, attempt, 0), start)

    def _text(self, text: str) -> list[Emitted]:
        opened = self._open
        assert opened is not None
        begin, end = opened.chars, opened.chars + len(text)
        opened.chars = end
        position = Position(opened.anchor, opened.attempt, end)
        if position <= self.after:
            return []
        if Position(opened.anchor, opened.attempt, begin) < self.after:
            text = text[self.after.chars - begin :]  # the client has the chunk's head already
        return [Emitted(position, TextMessageContentEvent(message_id=opened.message_id, delta=text))]

    def _end(self, opened: _OpenText) -> TextMessageEndEvent:
        self._open = None
        return TextMessageEndEvent(message_id=opened.message_id)

    def _at(self, position: Position, event: BaseEvent) -> list[Emitted]:
        return [Emitted(position, event)] if position > self.after else []

    def _call_completed(self, event: TraceEvent, entries: tuple[MessageEntry, ...]) -> list[Emitted]:
        """The rest of the call's text (from the thread when deltas were missed), its end, its tool calls."""
        raw_call = event.data.get("call")
        call = raw_call if isinstance(raw_call, int) else (self._open.call if self._open else -1)
        answer = next((e for e in reversed(entries) if e.payload.role == "assistant"), None)
        content = answer.payload.content if answer is not None else ""
        self.answer = content
        out: list[Emitted] = []
        opened = self._open if self._open is not None and self._open.call == call else None
        if self._before_origin(call):
            content = ""
        if opened is None and content:
            anchor = self._anchors.get(call, self.seq)
            resumed = self.after.seq == anchor and self.after.part > 0
            out += self._open_text(call, self.after.part if resumed else 1)
            opened = self._open
        if opened is not None and len(content) > opened.chars:
            out += self._text(content[opened.chars :])
        self.seq, self._k = event.seq, 0
        if opened is not None:
            out += _kept(self.stamp(self._end(opened)))
        self._ended_calls.add(call)
        message_id = opened.message_id if opened is not None else self._message_id(call, 1)
        for tool_call in answer.payload.tool_calls or [] if answer is not None else []:
            start = ToolCallStartEvent(
                tool_call_id=tool_call.id, tool_call_name=tool_call.name, parent_message_id=message_id
            )
            out += _kept(self.stamp(start))
            out += _kept(self.stamp(ToolCallArgsEvent(tool_call_id=tool_call.id, delta=tool_call.arguments)))
            out += _kept(self.stamp(ToolCallEndEvent(tool_call_id=tool_call.id)))
        return out

    # ---- trace events ----------------------------------------------------------------------

    def _trace(self, event: TraceEvent, item: HubItem) -> list[Emitted]:
        kind = event.kind
        if kind in CALL_END_KINDS:
            return self._call_completed(event, item.entries)
        self.seq, self._k = event.seq, 0
        if kind == "llm_started":
            call = event.data.get("call")
            if isinstance(call, int):
                self._anchors[call] = event.seq
            return []
        if kind == "tool_completed" and event.call_id is not None:
            result = next((e for e in self.entries if e.payload.tool_call_id == event.call_id), None)
            content = result.payload.content if result is not None else str(event.data.get("outcome", ""))
            message_id = f"{self.request_id}-r-{event.call_id}"
            return _kept(
                self.stamp(
                    ToolCallResultEvent(message_id=message_id, tool_call_id=event.call_id, content=content)
                )
            )
        if kind == "approval_requested" and Position(event.seq) > self.after:
            self.awaiting = event.call_id
            return []
        if kind in ("approval_decided", "input_injected", "input_rejected"):
            value = {"call_id": event.call_id, "input_id": event.input_id, **event.data}
            return _kept(self.stamp(CustomEvent(name=kind, value=value)))
        if kind == "state_effects_applied" and item.state is not None:
            return _kept(self.stamp(StateSnapshotEvent(snapshot=item.state.agent_state)))
        if kind in TERMINAL_KINDS:
            self.ended = item
        return []


def _kept(emitted: Emitted | None) -> list[Emitted]:
    return [emitted] if emitted is not None else []
