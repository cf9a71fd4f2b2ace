"""Events of a run's live stream (`temporalio.contrib.workflow_streams`, one topic per run).

A run hosts a Workflow Stream on its own workflow. Two kinds of item go out on the
`events` topic:

- `DeltaEvent`: a batch of text / thinking / tool-call fragments of one LLM call,
  published by the LLM activity (one signal per batch). `call` is the run's LLM-call
  index and `attempt` the activity attempt: deltas of an attempt that later failed
  and was retried carry the older attempt number, so a client discards them when it
  sees a higher one for the same call.
- `TraceItem`: one event of the run's trace, published by the workflow (no history
  cost: the workflow writes to its own stream log).

The durable truth stays the LLM activity's result and the run's thread: deltas of
an LLM call are dropped from the stream's log once the call has ended (its message
is in the thread, and the `llm_completed` trace event follows it on the stream).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from contracts.limits import DEFAULT_POLL_UPDATES
from contracts.run import TraceEvent
from conversation.messages import OmitDefaults

__all__ = [
    "DEFAULT_POLL_UPDATES",
    "EVENTS_TOPIC",
    "POLL_NAME",
    "PUBLISH_SIGNAL",
    "DeltaEvent",
    "StreamEvent",
    "ToolCallDelta",
    "TraceItem",
    "streamed_bytes",
]

EVENTS_TOPIC = "events"
"""The one topic of a run's stream."""
PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""The library's publish signal (`temporalio.contrib.workflow_streams`)."""
POLL_NAME = "__temporal_workflow_stream_poll"
"""The library's poll: an Update (waits for items; history) and a query of the same name (no history)."""


class ToolCallDelta(OmitDefaults):
    """A fragment of one tool call of the answer: `index` orders the calls; `arguments` is appended."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class DeltaEvent(OmitDefaults):
    """Fragments of LLM call `call` (attempt `attempt`), in order; `seq` counts this attempt's batches."""

    type: Literal["delta"] = "delta"
    call: int
    attempt: int = 1
    seq: int = 0
    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCallDelta] = []

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `type` is the union's tag: kept, although it is a default, so `StreamEvent` can parse it.
        return {"type": self.type, **OmitDefaults._omit_defaults(self, handler)}


def streamed_bytes(delta: DeltaEvent) -> int:
    """What a batch streams, counted against the call's and the run's byte budgets (UTF-8 bytes)."""
    pieces = [delta.text, delta.thinking, *(call.arguments for call in delta.tool_calls)]
    return sum(len(piece.encode()) for piece in pieces)


class TraceItem(BaseModel):
    """One trace event of the run, as it is recorded."""

    type: Literal["trace"] = "trace"
    event: TraceEvent


StreamEvent = Annotated[DeltaEvent | TraceItem, Field(discriminator="type")]
"""What a run's stream carries."""
