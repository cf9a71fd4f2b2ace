"""One AG-UI run as SSE: RUN_STARTED, the request's events from the hub, and how the run ends.

`StreamSpec` says which request to follow and from where; `stream_run` renders it (positions and
ids: `gateway.agui.render`). The AG-UI run ends with RUN_FINISHED (`interrupt` while a tool call
awaits approval, after a MESSAGES_SNAPSHOT; `cancelled`; success with the answer and usage) or
RUN_ERROR (the run failed, or the ask was refused: its reason code).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TokenUsage,
)
from temporalio.service import RPCError, RPCStatusCode

from clients.session_handle import SessionHandle
from contracts import RunState
from contracts.approval import PendingApproval
from contracts.errors import NOT_FOUND
from gateway.agui.render import START, Emitted, Position, RequestRenderer, opening, preamble_position
from gateway.agui.snapshot import interrupt_of, messages_snapshot
from gateway.context import GatewayContext
from gateway.core import Ended, Paused, RequestCore, Thread
from gateway.core.single_flight import shared
from gateway.core.streams import LOST
from gateway.errors import GatewayError

__all__ = ["StreamSpec", "sse", "stream_run"]

LOST_HERE = f"{LOST}; reconnect with the last event id"


@dataclass(frozen=True)
class StreamSpec:
    """What one AG-UI run streams: request `request_id` (run `run_workflow_id`) after `after`.

    Built whole by the route that answers (`gateway.agui.routes`; the thread id the client named
    added with `dataclasses.replace`), never written after.
    """

    thread: Thread
    run_id: str
    request_id: str
    run_workflow_id: str = ""
    after: Position = START
    origin: int | None = None
    run_started: bool = True
    preamble_kind: str = ""
    """What the preamble says (`gateway.agui.render.PREAMBLES`): RUN_STARTED's position names it."""
    preamble: tuple[BaseEvent, ...] = ()
    refusal: GatewayError | None = None
    wait_until_started: bool = False
    named: str = ""
    """The thread id the client named, when `thread` is its family's head (docs/branches.md)."""

    @property
    def thread_id(self) -> str:
        """The AG-UI thread id: the one the client named (its events keep it), else the thread's."""
        return self.named or self.thread.thread_id


def sse(event: BaseEvent, event_id: str) -> dict[str, str]:
    """One SSE message (sse-starlette's dict form)."""
    return {"id": event_id, "data": event.model_dump_json(by_alias=True, exclude_none=True)}


async def stream_run(
    ctx: GatewayContext, core: RequestCore, spec: StreamSpec
) -> AsyncIterator[dict[str, str]]:
    """The SSE messages of one AG-UI run (see the module docstring); every id distinct."""
    session = core.session(spec.thread)
    if spec.run_started:
        started = RunStartedEvent(
            thread_id=spec.thread_id, run_id=spec.run_id, protocol_version=PROTOCOL_VERSION
        )
        yield sse(started, opening(spec.after, spec.preamble_kind).event_id(spec.request_id))
    opening_events = list(spec.preamble)
    if spec.refusal is not None:
        opening_events.append(RunErrorEvent(message=spec.refusal.message, code=spec.refusal.code))
    for index, event in enumerate(opening_events):
        yield sse(event, preamble_position(spec.after, index).event_id(spec.request_id))
    if spec.refusal is not None:
        return
    renderer = RequestRenderer(spec.request_id, after=spec.after, origin=spec.origin)
    try:
        async for step in core.waits.follow(
            spec.thread, spec.request_id, spec.run_workflow_id, renderer, queued=spec.wait_until_started
        ):
            if isinstance(step, Paused):
                for emitted in await _interrupted(session, spec, renderer, step.pending):
                    yield _message(spec, emitted)
            elif isinstance(step, Ended):
                for emitted in await _ended(core, session, spec, renderer, step):
                    yield _message(spec, emitted)
            else:
                yield _message(spec, step)
    except (RPCError, GatewayError) as error:
        # The client may reconnect with the last event id: nothing it has is sent again.
        gone = isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND
        message = "the request's run cannot be found" if gone else LOST_HERE
        code = NOT_FOUND if gone else None
        yield _message(spec, renderer.force(RunErrorEvent(message=message, code=code)))


def _message(spec: StreamSpec, emitted: Emitted) -> dict[str, str]:
    return sse(emitted.event, emitted.position.event_id(spec.request_id))


async def _interrupted(
    session: SessionHandle, spec: StreamSpec, renderer: RequestRenderer, pending: list[PendingApproval]
) -> list[Emitted]:
    """The run's end as an interrupt: the conversation, then RUN_FINISHED naming the calls awaiting."""
    snapshot = await _snapshot(session, spec, renderer)
    outcome = RunFinishedInterruptOutcome(interrupts=[interrupt_of(p) for p in pending])
    finished = RunFinishedEvent(thread_id=spec.thread_id, run_id=spec.run_id, outcome=outcome)
    return [e for e in (renderer.stamp(snapshot), renderer.stamp(finished)) if e is not None]


async def _ended(
    core: RequestCore, session: SessionHandle, spec: StreamSpec, renderer: RequestRenderer, ended: Ended
) -> list[Emitted]:
    """Usage, the conversation, and RUN_FINISHED or RUN_ERROR."""
    item = renderer.ended
    if item is None:  # the run ended without saying how (terminated, timed out): what its record says
        record = await core.waits.state_at(spec.thread, ended)
        message = record.error_message or "the run ended without a result"
        return [renderer.force(RunErrorEvent(message=message, code=record.error_code))]
    state: RunState | None = item.state
    events: list[BaseEvent] = []
    usage = state.outcome.usage if state is not None else None
    if usage is not None:
        events.append(CustomEvent(name="usage", value=usage.model_dump(mode="json")))
    events.append(await _snapshot(session, spec, renderer))
    status = state.outcome.status if state is not None else "completed"
    if status == "failed":
        error = state.outcome.error if state is not None else None
        message = error.message if error is not None else "the run failed"
        events.append(RunErrorEvent(message=message, code=error.type if error is not None else None))
    else:
        tokens = (
            [
                TokenUsage(
                    input_tokens=usage.prompt_tokens,
                    output_tokens=usage.completion_tokens,
                    total_tokens=usage.total_tokens,
                )
            ]
            if usage is not None and usage.llm_calls
            else None
        )
        cancelled = RunFinishedCancelledOutcome() if status == "cancelled" else None
        result = renderer.answer if status == "completed" else None
        events.append(
            RunFinishedEvent(
                thread_id=spec.thread_id, run_id=spec.run_id, result=result, outcome=cancelled, usage=tokens
            )
        )
    return [e for e in (renderer.stamp(event) for event in events) if e is not None]


async def _snapshot(
    session: SessionHandle, spec: StreamSpec, renderer: RequestRenderer
) -> MessagesSnapshotEvent:
    """The conversation as it stands at this point of the request (read once for all its viewers)."""
    key = (session.workflow_id, "snapshot", spec.request_id, str(len(renderer.entries)))
    return await shared(key, partial(messages_snapshot, session, spec.request_id, renderer.entries))


def custom(name: str, value: object) -> CustomEvent:
    """A CUSTOM event (`value` must be JSON)."""
    return CustomEvent(name=name, value=json.loads(json.dumps(value)))
