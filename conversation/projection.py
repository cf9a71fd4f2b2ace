"""Thread -> context projection: the LLM view of each lane, derived from the log.

For a lane, the latest `replace` operation of that lane is the anchor (none: an
empty context); every later `ai_message` of the lane is folded in seq order.
`switch` entries are not folded.

System prompt rule (so that projection depends on the thread alone): the lane's
anchor prompt when its `result_context` has one, else the *current* prompt, which
is the prompt of the latest `replace` of any lane that carried one, else the
configured base prompt. This is what "a replace that carries a system prompt
updates the prompt" and "a new lane starts with the current system prompt" mean.

`LaneViews` is the projection of every lane kept up to date entry by entry, so a
conversation never re-reads its thread; `project` folds a thread from scratch with
the same code. A view may be windowed (`window_chars`): its oldest messages are then
dropped once it grows past the window, never splitting a tool call from its results.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from conversation.messages import Context, Message
from conversation.thread import ContextOpEntry, Entry, MessagePayload

WINDOW_SLACK = 1.25
"""A windowed lane is trimmed back to its window once it exceeds it by this factor (amortised)."""


def message_of(payload: MessagePayload) -> Message:
    """The LLM message an `ai_message` payload stands for."""
    return Message(
        role=payload.role,
        content=payload.content,
        tool_calls=list(payload.tool_calls) if payload.tool_calls else None,
        tool_call_id=payload.tool_call_id,
        name=payload.name,
        thinking=payload.thinking,
        attachments=payload.attachments,
    )


def message_chars(message: Message) -> int:
    """A cheap size of a message: the characters of its text and tool calls."""
    calls = sum(len(call.arguments) + len(call.name) for call in message.tool_calls or ())
    return len(message.content) + calls + len(message.thinking or "") + 16


class LaneView(BaseModel):
    """One lane as projected so far.

    Attributes:
        anchor_prompt: the system prompt the lane's latest replace carried, if any.
        summary: the summary the lane's latest replace carried, if any.
        messages: the lane's messages since that replace (the newest ones, if windowed).
        start_seq: seq of the lane's latest replace, else of its first message.
        omitted: messages dropped from the front by the window.
        chars: `message_chars` of `messages`, summed.
    """

    anchor_prompt: str | None = None
    summary: str | None = None
    messages: list[Message] = []
    start_seq: int | None = None
    omitted: int = 0
    chars: int = 0

    def add(self, message: Message, seq: int, window_chars: int | None) -> None:
        """Fold one message in, then trim to the window if it has grown past it."""
        if self.start_seq is None:
            self.start_seq = seq
        self.messages.append(message)
        self.chars += message_chars(message)
        if window_chars is not None and self.chars > window_chars * WINDOW_SLACK:
            self.trim(window_chars)

    def trim(self, window_chars: int) -> None:
        """Drop the oldest messages until the view fits `window_chars` (keeping at least the newest)."""
        drop = 0
        chars = self.chars
        while drop < len(self.messages) - 1 and chars > window_chars:
            chars -= message_chars(self.messages[drop])
            drop += 1
        # Never keep a tool result whose call was dropped: providers reject it.
        while drop < len(self.messages) - 1 and self.messages[drop].role == "tool":
            chars -= message_chars(self.messages[drop])
            drop += 1
        if drop:
            del self.messages[:drop]
            self.omitted += drop
            self.chars = chars


class LaneViews(BaseModel):
    """The projection of every lane, maintained incrementally.

    `replaced_prompt` is the prompt of the latest replace (of any lane) that carried one.
    """

    lanes: dict[str, LaneView] = {}
    replaced_prompt: str | None = None

    def feed(self, entry: Entry, window_chars: int | None = None) -> None:
        """Fold one thread entry into the views."""
        if isinstance(entry, ContextOpEntry):
            op = entry.payload.operation
            if op.type != "replace" or op.result_context is None:
                return
            given = op.result_context
            if given.system_prompt is not None:
                self.replaced_prompt = given.system_prompt
            view = LaneView(anchor_prompt=given.system_prompt, summary=given.summary, start_seq=entry.seq)
            for message in given.messages:
                # Copied: the entry's own messages must never be reachable from a view.
                view.messages.append(message.model_copy(deep=True))
                view.chars += message_chars(message)
            if window_chars is not None and view.chars > window_chars:
                view.trim(window_chars)
            self.lanes[entry.payload.context_ref] = view
            return
        view = self.lanes.setdefault(entry.payload.context_ref, LaneView())
        view.add(message_of(entry.payload), entry.seq, window_chars)

    def view(self, context_ref: str) -> LaneView:
        """A lane's view (an empty one for a lane never seen)."""
        return self.lanes.get(context_ref) or LaneView()

    def context(self, context_ref: str, base_system_prompt: str | None) -> Context:
        """The materialized context of a lane, with the system prompt rule applied."""
        view = self.view(context_ref)
        current = self.replaced_prompt if self.replaced_prompt is not None else base_system_prompt
        prompt = view.anchor_prompt if view.anchor_prompt is not None else current
        return Context(system_prompt=prompt, summary=view.summary, messages=list(view.messages))


def project(
    entries: Sequence[Entry],
    context_ref: str,
    *,
    base_system_prompt: str | None = None,
    at_seq: int | None = None,
) -> Context:
    """Project the context of lane `context_ref` as of entry `at_seq` (inclusive), from scratch.

    Args:
        entries: the thread, in seq order, from seq 0.
        context_ref: the lane.
        base_system_prompt: the configured prompt, used until a replace sets one.
        at_seq: the last entry to take into account; None means the whole thread.
    """
    end = len(entries) if at_seq is None else max(0, min(len(entries), at_seq + 1))
    views = LaneViews()
    for entry in entries[:end]:
        views.feed(entry)
    return views.context(context_ref, base_system_prompt)
