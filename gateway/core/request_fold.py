"""One request's run as text parts: the fold under every protocol's renderer (pure: no I/O).

A renderer (AG-UI's `gateway.agui.render`, the AI SDK's `gateway.aisdk.chunks`) feeds a request's
run events to `RequestFold` and names the chunks of what it answers:

- `PartOpened`, `PartWritten`, `PartClosed`: a text part (the answer's text, or the model's
  thinking: `reasoning`) of LLM call `c`, attempt `a`, is opened, written, closed. Its id is
  `{request}-c{c}` (`-a{a}` for a retry, `-thinking` for reasoning): durable facts, so any gateway
  names the same parts. A retry (a higher attempt, `contracts.call_texts`) closes what the failed
  attempt wrote (`PartClosed.retry`) and starts over in a new part; a superseded attempt's late
  batches are dropped.
- `CallEnded`: at `llm_completed` / `llm_interrupted`, the rest of the call's text comes from the
  thread first (the deltas this stream missed, or never had: the run drops them from its stream once
  the thread holds the answer), then its parts close, then the call's answer message (its tool calls).
  When the text streamed here is not the answer's start (a retry whose deltas this stream never
  had), the parts close as for a retry and the answer is written whole in the next attempt's part.

Text of a call that has ended, or that started at or before `origin` (a stream that continues a
request from there: the client has that text), is not rendered. A call's anchor is the seq of its
`llm_started` (the newest trace seq seen, for a call whose start this stream did not see).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from contracts import TraceEvent
from contracts.call_texts import CallTexts
from contracts.run import CALL_END_KINDS
from contracts.stream import DeltaEvent
from conversation import MessageEntry, MessagePayload

__all__ = [
    "CallEnded",
    "FoldEvent",
    "PartClosed",
    "PartKind",
    "PartOpened",
    "PartWritten",
    "RequestFold",
    "TextPart",
    "answer_of",
    "part_id",
]

PartKind = Literal["reasoning", "text"]
"""What a part holds: the model's thinking, or the answer's text."""
PARTS: tuple[PartKind, ...] = ("reasoning", "text")
"""The parts of a call, in the order they are written and closed."""


def part_id(request_id: str, call: int, attempt: int, kind: PartKind = "text") -> str:
    """The id of call `call`'s (attempt `attempt`) part of `kind`: `{request}-c{call}[-a{n}][-thinking]`."""
    retry = "" if attempt == 1 else f"-a{attempt}"
    return f"{request_id}-c{call}{retry}" + ("-thinking" if kind == "reasoning" else "")


def answer_of(entries: Sequence[MessageEntry]) -> MessagePayload | None:
    """The newest assistant message of `entries` (the answer an LLM call's end brought), or None."""
    return next((e.payload for e in reversed(entries) if e.payload.role == "assistant"), None)


@dataclass
class TextPart:
    """A part being written: its kind, id, call, attempt, the call's anchor and its characters so far."""

    kind: PartKind
    id: str
    call: int
    attempt: int
    anchor: int
    chars: int = 0


@dataclass(frozen=True)
class PartOpened:
    """`part` starts (nothing written yet)."""

    part: TextPart


@dataclass(frozen=True)
class PartWritten:
    """`text` was appended to `part`: its characters `begin` to `end`."""

    part: TextPart
    text: str
    begin: int
    end: int


@dataclass(frozen=True)
class PartClosed:
    """`part` is done: at its call's end, or (`retry`: the new attempt) because a retry starts over."""

    part: TextPart
    retry: int | None = None


@dataclass(frozen=True)
class CallEnded:
    """LLM call `call` ended (after its parts closed): its answer, and the id of its text part."""

    call: int
    answer: MessagePayload | None
    message_id: str
    """The id of the call's text part (attempt 1's when it wrote none)."""
    before_origin: bool
    """Whether the call started at or before `origin` (the client has its text)."""

    @property
    def content(self) -> str:
        """The answer's text ("" when the thread could not be read)."""
        return self.answer.content if self.answer is not None else ""


FoldEvent = PartOpened | PartWritten | PartClosed | CallEnded


@dataclass
class RequestFold:
    """Folds one request's run events into text parts and call ends (see the module docstring).

    `kinds`: the parts the protocol renders (deltas carrying none of them change nothing).
    `resumed_at`: (a call's anchor, attempt) when the stream resumes inside that attempt's text:
    text of that call read from the thread continues the attempt's part.
    """

    request_id: str
    kinds: tuple[PartKind, ...] = PARTS
    origin: int | None = None
    resumed_at: tuple[int, int] | None = None
    seq: int = -1
    """The newest trace event's seq."""
    _parts: dict[PartKind, TextPart] = field(default_factory=dict[PartKind, TextPart])
    _call: tuple[int, int] | None = None
    """(call, attempt) whose parts are open."""
    _anchors: dict[int, int] = field(default_factory=dict[int, int])
    _ended: set[int] = field(default_factory=set[int])
    _texts: CallTexts = field(default_factory=CallTexts)

    def anchor(self, call: int) -> int:
        """Where call `call` stands: its `llm_started`'s seq (the newest trace seq when unseen)."""
        return self._anchors.get(call, self.seq)

    def streamed_all(self, call: int, chars: int) -> bool:
        """Whether this stream's deltas hold all `chars` characters of call `call`'s text (no thread read)."""
        return len(self._texts.text(call)) == chars

    def before_origin(self, call: int) -> bool:
        """Whether call `call` started at or before `origin` (its text is not rendered)."""
        return self.origin is not None and self.anchor(call) <= self.origin

    def delta(self, delta: DeltaEvent) -> list[FoldEvent]:
        """What a batch of deltas renders."""
        written: dict[PartKind, str] = {"reasoning": delta.thinking, "text": delta.text}
        pieces: list[tuple[PartKind, str]] = [(kind, written[kind]) for kind in self.kinds if written[kind]]
        if not pieces or delta.call in self._ended or self.before_origin(delta.call):
            return []
        if self._texts.add(delta) == "stale":
            return []  # a superseded attempt's late deltas
        out: list[FoldEvent] = []
        if self._call != (delta.call, delta.attempt):
            out += self.close(retry=delta.attempt)  # what the failed attempt wrote stays, closed
            self._call = (delta.call, delta.attempt)
        for kind, text in pieces:
            out += self._write(kind, text)
        return out

    def trace(self, event: TraceEvent, entries: Sequence[MessageEntry] = ()) -> list[FoldEvent]:
        """What a trace event renders of the text (`entries`: the thread messages it brought)."""
        if event.kind in CALL_END_KINDS:
            return self._call_ended(event, entries)
        self.seq = event.seq
        if event.kind == "llm_started" and isinstance(call := event.data.get("call"), int):
            self._anchors[call] = event.seq
        return []

    def _write(self, kind: PartKind, text: str) -> list[FoldEvent]:
        assert self._call is not None
        out: list[FoldEvent] = []
        part = self._parts.get(kind)
        if part is None:
            call, attempt = self._call
            part = self._parts[kind] = TextPart(
                kind, part_id(self.request_id, call, attempt, kind), call, attempt, self.anchor(call)
            )
            out.append(PartOpened(part))
        begin = part.chars
        part.chars += len(text)
        return [*out, PartWritten(part, text, begin, part.chars)]

    def close(self, retry: int | None = None) -> list[FoldEvent]:
        """Close the open parts (`retry`: the attempt whose first batch closes them)."""
        closed: list[FoldEvent] = [
            PartClosed(self._parts[kind], retry) for kind in PARTS if kind in self._parts
        ]
        self._parts.clear()
        self._call = None
        return closed

    def _call_ended(self, event: TraceEvent, entries: Sequence[MessageEntry]) -> list[FoldEvent]:
        raw = event.data.get("call")
        call = raw if isinstance(raw, int) else (self._call[0] if self._call is not None else -1)
        answer = answer_of(entries)
        content = answer.content if answer is not None else ""
        before = self.before_origin(call)
        out: list[FoldEvent] = []
        if self._call is not None and self._call[0] != call:
            out += self.close()
        text = self._parts.get("text")
        sent = text.chars if text is not None else 0
        streamed = self._texts.text(call)
        resumed = self.resumed_at is not None and self.resumed_at[0] == self.anchor(call)
        if text is not None and self._call is not None and not resumed and len(streamed) == sent:
            if content and not content.startswith(streamed):  # a retry whose deltas this stream never had
                attempt = self._call[1] + 1
                out += self.close(retry=attempt)
                self._call, sent = (call, attempt), 0
        if not before and "text" in self.kinds and len(content) > sent:  # the deltas missed: from the thread
            if self._call is None:  # none streamed here: its first attempt's (or the one resumed inside)
                self._call = (call, self.resumed_at[1] if self.resumed_at is not None and resumed else 1)
            out += self._write("text", content[sent:])
        text = self._parts.get("text")
        message_id = text.id if text is not None else part_id(self.request_id, call, 1)
        self.seq = event.seq
        out += self.close()
        self._ended.add(call)
        return [*out, CallEnded(call, answer, message_id, before)]
