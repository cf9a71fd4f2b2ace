"""One request's run as the Vercel AI SDK's UI message stream chunks (npm `ai` 7): pure, no I/O.

A response of this stream is SSE (`data: <chunk JSON>` events, then `data: [DONE]`) with the
headers of `UI_MESSAGE_STREAM_HEADERS` (`x-vercel-ai-ui-message-stream: v1` among them). The SDK's
`DefaultChatTransport` parses each chunk with its `uiMessageChunkSchema` and folds them into one
assistant `UIMessage`. `RequestChunks` folds a request's run events (the run's stream: `DeltaEvent`
batches and `TraceItem`s, with the thread messages each trace event brought) into those chunks:

- the stream opens: `start` (`messageId` = `<request id>:answer`);
- `llm_started`: `start-step`; text deltas of LLM call c: `text-start` (id `<request>-c<c>`, with
  `-a<n>` for retry n), `text-delta`; thinking deltas: `reasoning-start` / `reasoning-delta`;
- `llm_completed` / `llm_interrupted`: the rest of the text from the thread (the deltas missed),
  `text-end`, `reasoning-end`, one `tool-input-available` per tool call (`dynamic` and
  `providerExecuted`: the gateway runs the tools), `finish-step`;
- `approval_requested`: `tool-approval-request` (`approvalId` = `toolCallId` = the call id); the
  stream may end there (`pause()`: `finish` with `tool-calls`);
- `approval_decided`: `tool-approval-response` (denied: `tool-output-denied` too);
- `tool_completed`: `tool-output-available` (the tool's result text), or `tool-output-error`;
- `request_completed`: `finish` (`stop`); `request_failed`: `error` (`<code>: <message>`), `finish`
  (`error`); `request_cancelled`: `finish` (`other`, `messageMetadata.cancelled`).

docs/ai-sdk.md has the same table with examples.

Every id is a durable fact (the request id, the LLM call's number and attempt, the tool call's
id), so any gateway renders the same chunks for the same run, and the SDK's replaying resume
(`GET {api}/{id}/stream`: the running request's stream from its start) gets the same message.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from typing import Final

from pydantic import JsonValue

from contracts import TraceEvent
from contracts.run import CALL_END_KINDS, TERMINAL_KINDS
from contracts.stream import DeltaEvent, TraceItem
from conversation import MessageEntry
from gateway.core.request_fold import CallEnded, FoldEvent, PartClosed, PartOpened, PartWritten, RequestFold
from gateway.feed.hub import HubItem

__all__ = [
    "DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "Chunk",
    "RequestChunks",
    "answer_message_id",
    "error_chunks",
    "sse",
]

Chunk = dict[str, JsonValue]
"""One UI message stream chunk (a JSON object with a `type`)."""

UI_MESSAGE_STREAM_HEADERS: Final = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (the SDK's own `UI_MESSAGE_STREAM_HEADERS`)."""

DONE: Final = b"data: [DONE]\n\n"
"""The stream's last event."""

ANSWER_SUFFIX: Final = ":answer"
"""What the answer's message id adds to the request id (`:` is never in a request id)."""


def answer_message_id(request_id: str) -> str:
    """The id of the assistant message that answers request `request_id` (`<request id>:answer`).

    Not the request id itself: that is the asking user message's id, and a chat's messages need
    distinct ids (`useChat` front ends key their rendering by it).
    """
    return request_id + ANSWER_SUFFIX


def request_id_of_answer(message_id: str) -> str:
    """The request id an assistant message's id names (an id without the suffix is taken as it is)."""
    return message_id.removesuffix(ANSWER_SUFFIX)


def sse(chunk: Chunk) -> bytes:
    """`chunk` as one SSE event."""
    return b"data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def error_chunks(code: str, message: str, *, refused: bool = False) -> list[Chunk]:
    """A failure as the stream's end: `error` (`<code>: <message>`), then `finish` (`error`).

    `refused`: nothing was asked (the session refused it): `messageMetadata.refused` says so.
    """
    metadata: dict[str, JsonValue] = {"error": {"code": code}}
    if refused:
        metadata["refused"] = True
    return [
        {"type": "error", "errorText": f"{code}: {message}"},
        {"type": "finish", "finishReason": "error", "messageMetadata": metadata},
    ]


class RequestChunks:
    """Folds one request's run events into UI message stream chunks (see the module docstring).

    The text is folded by `gateway.core.request_fold.RequestFold` (its parts are the SDK's text and
    reasoning parts); this names the chunks. `origin`: trace events at or before this seq, and the
    text of LLM calls started at or before it, are not rendered (a stream that continues a message
    the client has up to there).
    """

    def __init__(self, request_id: str, origin: int = -1, after_requests: Collection[str] = ()) -> None:
        """Render request `request_id`'s run after trace seq `origin`, or after `after_requests`.

        `after_requests`: calls whose approval requests the stream continues after (a stream of
        decisions): nothing renders until the run's replay has passed all of them.
        """
        self.request_id = request_id
        self._fold = RequestFold(request_id)
        self._after_requests = set(after_requests)
        self.origin = sys.maxsize if after_requests else origin
        self.awaiting: list[str] = []
        """The call ids whose approval was requested and not yet decided, in order."""
        self.ended = False
        """Whether the request's end (`finish`) was rendered."""
        self._tools: dict[str, str] = {}
        """Call id -> tool name, for the tool calls rendered."""

    @property
    def origin(self) -> int:
        """Trace events and text of LLM calls started at or before this seq are not rendered."""
        return self._fold.origin if self._fold.origin is not None else -1

    @origin.setter
    def origin(self, seq: int) -> None:
        self._fold.origin = seq if seq >= 0 else None

    def start(self, metadata: dict[str, JsonValue] | None = None) -> list[Chunk]:
        """The stream's first chunk: the assistant message's start (its id: `answer_message_id`).

        `metadata`: the message's metadata from the start (the gateway says what it did with the ask).
        """
        start: Chunk = {"type": "start", "messageId": answer_message_id(self.request_id)}
        if metadata is not None:
            start["messageMetadata"] = metadata
        return [start]

    def pause(self) -> list[Chunk]:
        """The stream's end while the request waits for approvals (`awaiting`): `finish` (`tool-calls`).

        The request goes on once decided; the client sends its decisions in its next chat request
        (the tool parts in state `approval-responded`), and that request's stream continues this one.
        """
        return [*self._close_parts(), {"type": "finish", "finishReason": "tool-calls"}]

    async def show(self, item: HubItem) -> list[Chunk]:
        """The chunks of one of the run's hub items (the AI SDK's `RequestView`)."""
        enriched = await item.enriched()
        event = enriched.event
        if self._after_requests and isinstance(event, TraceItem) and event.event.kind == "approval_requested":
            self._after_requests.discard(event.event.call_id or "")
            if not self._after_requests:
                self.origin = event.event.seq
        return self.feed(event, enriched.entries)

    @property
    def asked(self) -> list[str]:
        """The calls whose approval was requested and not yet decided (the stream pauses if one waits)."""
        return self.awaiting

    def feed(self, event: DeltaEvent | TraceItem, entries: Sequence[MessageEntry] = ()) -> list[Chunk]:
        """The chunks of one run event (`entries`: the thread messages the run gained by it)."""
        if self.ended:
            return []
        if isinstance(event, DeltaEvent):
            return self._text(self._fold.delta(event))
        return self._text(self._fold.trace(event.event, entries)) + self._trace(event.event, entries)

    # ---- text --------------------------------------------------------------------------------

    def _text(self, folded: list[FoldEvent]) -> list[Chunk]:
        out: list[Chunk] = []
        for step in folded:
            match step:
                case PartOpened(part):
                    out.append({"type": f"{part.kind}-start", "id": part.id})
                case PartWritten(part, text):
                    out.append({"type": f"{part.kind}-delta", "id": part.id, "delta": text})
                case PartClosed(part):
                    out.append({"type": f"{part.kind}-end", "id": part.id})
                case CallEnded(before_origin=False):
                    out += self._call_ended(step)
                case CallEnded():
                    pass
        return out

    def _close_parts(self) -> list[Chunk]:
        """The open parts' ends (the stream pauses or ends with them open)."""
        return self._text(self._fold.close())

    def _call_ended(self, ended: CallEnded) -> list[Chunk]:
        out: list[Chunk] = []
        for tool_call in ended.answer.tool_calls or [] if ended.answer is not None else []:
            self._tools[tool_call.id] = tool_call.name
            out.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": tool_call.id,
                    "toolName": tool_call.name,
                    "input": _arguments(tool_call.arguments),
                    "dynamic": True,
                    "providerExecuted": True,
                }
            )
        return [*out, {"type": "finish-step"}]

    # ---- trace events ------------------------------------------------------------------------

    def _trace(self, event: TraceEvent, entries: Sequence[MessageEntry]) -> list[Chunk]:
        kind = event.kind
        if kind in CALL_END_KINDS or event.seq <= self.origin:
            return []
        if kind == "llm_started":
            return [{"type": "start-step"}]
            return []
        call_id = event.call_id
        if kind == "approval_requested" and call_id is not None:
            self.awaiting.append(call_id)
            return [{"type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id}]
        if kind == "approval_decided" and call_id is not None:
            return self._decided(call_id, event)
        if kind == "tool_completed" and call_id is not None:
            return self._tool_completed(call_id, event, entries)
        if kind in TERMINAL_KINDS:
            return self._end(event)
        return []

    def _decided(self, call_id: str, event: TraceEvent) -> list[Chunk]:
        if call_id in self.awaiting:
            self.awaiting.remove(call_id)
        approved = event.data.get("approved") is True
        response: Chunk = {"type": "tool-approval-response", "approvalId": call_id, "approved": approved}
        reason = event.data.get("reason")
        if isinstance(reason, str) and reason:
            response["reason"] = reason
        if approved:
            return [response]
        return [response, {"type": "tool-output-denied", "toolCallId": call_id}]

    def _tool_completed(
        self, call_id: str, event: TraceEvent, entries: Sequence[MessageEntry]
    ) -> list[Chunk]:
        result = next((e.payload for e in entries if e.payload.tool_call_id == call_id), None)
        output = result.content if result is not None else str(event.data.get("outcome", ""))
        if call_id not in self._tools:  # the call's input was before `origin`: the client has it
            self._tools[call_id] = str(event.data.get("name", ""))
        if event.data.get("ok") is False:
            return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": output}]
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": output}]

    def _end(self, event: TraceEvent) -> list[Chunk]:
        self.ended = True
        out = self._close_parts()
        if event.kind == "request_completed":
            return [*out, {"type": "finish", "finishReason": "stop"}]
        if event.kind == "request_cancelled":
            return [*out, {"type": "finish", "finishReason": "other", "messageMetadata": {"cancelled": True}}]
        error = event.data.get("error")
        code, message = "request_failed", "the request failed"
        if isinstance(error, dict):
            code = str(error.get("type") or code)
            message = str(error.get("message") or message)
        return [*out, *error_chunks(code, message)]


def _arguments(raw: str) -> JsonValue:
    """A tool call's arguments as JSON (the raw text when the model wrote no valid JSON)."""
    try:
        value: JsonValue = json.loads(raw)
    except ValueError:
        return raw
    return value
