"""What the gateway's streaming responses (AG-UI, the AI SDK) share: the streaming ask, refusals, keep-alives.

`ask_streaming` asks once for every protocol that answers an ask with the request's stream, and
describes the stream to send (`StreamingAsk`, frozen): the request and its run, what the session
did with the ask (`queued` for an enqueued one), or the session's refusal (streamed: the refusals
in `HTTP_REFUSALS` are raised, answered as HTTP errors), and, for a steering ask, where the
running request stood when the steer reached it (`origin`: the stream continues from there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from contracts.errors import INVALID_INPUT, NOT_FOUND, PAYLOAD_TOO_LARGE, QUOTA_EXCEEDED, UNAVAILABLE
from contracts.session import OnBusy
from contracts.signals import SteerMode
from conversation.attachments import Attachment
from gateway.core.requests import RequestCore
from gateway.core.threads import Thread
from gateway.errors import GatewayError

__all__ = ["HTTP_REFUSALS", "LOST", "PING_S", "BusyPolicy", "StreamingAsk", "ask_streaming"]

PING_S = 15
"""Seconds between two SSE keep-alive comments of a streaming response."""
HTTP_REFUSALS = frozenset({INVALID_INPUT, PAYLOAD_TOO_LARGE, NOT_FOUND, UNAVAILABLE, QUOTA_EXCEEDED})
"""Refusals of an ask answered as HTTP errors (the session's answers, `busy` and the like, are streamed)."""
LOST = "the gateway lost the run's stream (Temporal did not answer in time)"
"""Why a stream ended early; each protocol adds how its client goes on."""


class BusyPolicy(Protocol):
    """An ask's busy policy, as a protocol's request carries it."""

    @property
    def on_busy(self) -> OnBusy:
        """What to do when the thread is busy."""
        ...

    @property
    def mode(self) -> SteerMode:
        """A steer's mode."""
        ...

    @property
    def expected_last_request(self) -> str | None:
        """The request the client last saw (the stale check), or None."""
        ...


@dataclass(frozen=True)
class StreamingAsk:
    """An ask whose answer is streamed: the request to follow and from where (see the module docstring)."""

    request_id: str
    run_workflow_id: str = ""
    ack: dict[str, JsonValue] | None = None
    """What the session did with the ask (`AskAccepted`, with `disposition` `queued` for `enqueued`)."""
    refusal: GatewayError | None = None
    """The session's refusal (nothing was asked)."""
    origin: int | None = None
    """A steering ask's: the running request's newest trace seq when the steer reached it."""
    queued: bool = False
    """Whether the request waits behind others (the stream waits for its start)."""


async def ask_streaming(
    core: RequestCore,
    thread: Thread,
    text: str,
    *,
    request_id: str,
    policy: BusyPolicy,
    source: str,
    attachments: Sequence[Attachment] = (),
) -> StreamingAsk:
    """Ask `text` (and `attachments`, taken in before) under `policy`; describe the stream that answers it.

    Raises:
        GatewayError: a refusal of `HTTP_REFUSALS` (the others are the returned `refusal`).
    """
    head = (
        await core.reads.active_head(thread) if policy.on_busy == "steer" else None
    )  # before the steer reaches it
    try:
        accepted = await core.asks.ask(
            thread,
            text,
            request_id=request_id,
            on_busy=policy.on_busy,
            mode=policy.mode,
            expected_last_request=policy.expected_last_request,
            source=source,
            attachments=attachments,
        )
    except GatewayError as refused:
        if refused.code in HTTP_REFUSALS:
            raise
        return StreamingAsk(request_id, refusal=refused)
    queued = accepted.disposition == "enqueued"
    ack: dict[str, JsonValue] = {
        **accepted.model_dump(mode="json", exclude_none=True),
        "disposition": "queued" if queued else accepted.disposition,
    }
    origin: int | None = None
    if accepted.disposition == "steered":
        same = head is not None and head[0] == accepted.run_workflow_id
        origin = (
            head[1] if head is not None and same else await core.reads.trace_head(accepted.run_workflow_id)
        )
    return StreamingAsk(accepted.request_id, accepted.run_workflow_id, ack, origin=origin, queued=queued)
