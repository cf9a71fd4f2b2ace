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
from contracts.run import TERMINAL_KINDS
from contracts.stream import DeltaEvent
from conversation import MessageEntry
from gateway.core.request_fold import (
    CallEnded,
    FoldEvent,
    PartClosed,
    PartOpened,
    PartWritten,
    RequestFold,
    TextPart,
)
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
class RequestRenderer:
    """Folds one request's hub items into AG-UI events, dropping those at or before `after`.

    The text is folded by `gateway.core.request_fold.RequestFold` (its parts are AG-UI's text
    messages; thinking is not rendered); this names its events and their positions.
    """

    request_id: str
    after: Position = START
    origin: int | None = None
    """Text of LLM calls started at or before this trace seq is not rendered (a steered ask's stream
    shows the running request from the steer on)."""
    awaiting: str | None = None
    """The call id of the `approval_requested` just rendered (the caller decides whether to stop)."""
    ended: HubItem | None = None
    """The request's terminal item, once rendered."""
    answer: str = ""
    """The text of the newest LLM call that ended (the answer, once the request has ended)."""
    entries: list[MessageEntry] = field(default_factory=list[MessageEntry])
    """The request's thread messages seen so far (for MESSAGES_SNAPSHOT)."""
    _k: int = 0
    _fold: RequestFold = field(init=False)

    def __post_init__(self) -> None:
        resumed_at = (self.after.seq, self.after.part) if self.after.part > 0 else None
        self._fold = RequestFold(self.request_id, kinds=("text",), origin=self.origin, resumed_at=resumed_at)

    @property
    def seq(self) -> int:
        """The newest trace event's seq."""
        return self._fold.seq

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

    async def show(self, item: HubItem) -> list[Emitted]:
        """The events of `item` with the thread messages it added (AG-UI's `RequestView`)."""
        return self.feed(await item.enriched())

    @property
    def asked(self) -> tuple[str, ...]:
        """The call whose `approval_requested` was just rendered (the stream pauses if it still waits)."""
        return (self.awaiting,) if self.awaiting is not None else ()

    def feed(self, item: HubItem) -> list[Emitted]:
        """The events `item` renders to (after `after` only)."""
        self.awaiting = None
        self.entries.extend(item.entries)
        if isinstance(item.event, DeltaEvent):
            return self._text(self._fold.delta(item.event))
        event = item.event.event
        self._k = 0
        return self._text(self._fold.trace(event, item.entries)) + self._trace(event, item)

    # ---- text ------------------------------------------------------------------------------

    def _text(self, folded: list[FoldEvent]) -> list[Emitted]:
        out: list[Emitted] = []
        for step in folded:
            match step:
                case PartOpened(part):
                    start = TextMessageStartEvent(message_id=part.id, role="assistant")
                    out += self._at(Position(part.anchor, part.attempt, 0), start)
                case PartWritten(part, text, begin, end):
                    out += self._written(part, text, begin, end)
                case PartClosed(part, retry) if retry is not None:  # a retry starts over
                    out += self._at(Position(part.anchor, retry, -1), TextMessageEndEvent(message_id=part.id))
                case PartClosed(part):
                    out += _kept(self.stamp(TextMessageEndEvent(message_id=part.id)))
                case CallEnded():
                    out += self._call_ended(step)
        return out

    def _written(self, part: TextPart, text: str, begin: int, end: int) -> list[Emitted]:
        position = Position(part.anchor, part.attempt, end)
        if position <= self.after:
            return []
        if Position(part.anchor, part.attempt, begin) < self.after:
            text = text[self.after.chars - begin :]  # the client has the chunk's head already
        return [Emitted(position, TextMessageContentEvent(message_id=part.id, delta=text))]

    def _at(self, position: Position, event: BaseEvent) -> list[Emitted]:
        return [Emitted(position, event)] if position > self.after else []

    def _call_ended(self, ended: CallEnded) -> list[Emitted]:
        """The call's tool calls (its text, and the text's end, came before)."""
        self.answer = ended.content
        out: list[Emitted] = []
        for tool_call in ended.answer.tool_calls or [] if ended.answer is not None else []:
            start = ToolCallStartEvent(
                tool_call_id=tool_call.id, tool_call_name=tool_call.name, parent_message_id=ended.message_id
            )
            out += _kept(self.stamp(start))
            out += _kept(self.stamp(ToolCallArgsEvent(tool_call_id=tool_call.id, delta=tool_call.arguments)))
            out += _kept(self.stamp(ToolCallEndEvent(tool_call_id=tool_call.id)))
        return out

    # ---- trace events ----------------------------------------------------------------------

    def _trace(self, event: TraceEvent, item: HubItem) -> list[Emitted]:
        kind = event.kind
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
