"""What the stream tests send to a run's Workflow Stream handlers: junk, forgeries, and a streaming run."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RawValue
from temporalio.converter import PayloadConverter

from contracts import RunResult, TraceEvent
from contracts.stream import EVENTS_TOPIC, DeltaEvent, TraceItem
from tests.helpers import start_run, turn, wait_until

ANSWER = "streamed answer " * 40
FORGED_TEXT = "FORGED-DELTA"


def entry(value: Any) -> dict[str, str]:
    """A well-formed publish entry carrying `value` on the events topic."""
    payload = PayloadConverter.default.to_payloads([value])[0]
    return {"topic": EVENTS_TOPIC, "data": base64.b64encode(payload.SerializeToString()).decode()}


JUNK_PUBLISHES: list[Any] = [
    None,
    5,
    "text",
    [1, 2],
    {"items": 5},
    {"items": [None]},
    {"items": [{"topic": EVENTS_TOPIC, "data": "!!! not base64 !!!"}]},
    {"items": [{"topic": EVENTS_TOPIC, "data": base64.b64encode(b"\xff\xfe\xfd\x00\x01").decode()}]},
    {"items": [{"topic": EVENTS_TOPIC, "data": 7}]},
    {"items": [], "publisher_id": 5},
    {"items": [], "sequence": "x"},
    {"items": [{"topic": EVENTS_TOPIC, "data": base64.b64encode(b"\x0a\x05hello").decode()}]},
    RawValue(Payload(metadata={"encoding": b"binary/plain"}, data=b"\x00\xff")),
    RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b"{not json")),
]
"""Publish-signal arguments the library's own handler raised on (or that are not a publish at all)."""

JUNK_POLLS: list[Any] = [
    None,
    5,
    "x",
    [],
    {"from_offset": -1},
    {"from_offset": "0"},
    {"topics": 5},
    {"topics": [1]},
]
"""Poll arguments that are not a `PollInput`."""


def forged_publishes(call: int) -> list[dict[str, Any]]:
    """Well-formed publishes from someone other than the call's activity: a delta and a fake end."""
    fake_end = TraceItem(
        event=TraceEvent(
            seq=10_000,
            at=datetime.now(UTC),
            kind="request_completed",
            iteration=0,
            request_id="r",
            run_id="x",
        )
    )
    return [
        {"items": [entry(DeltaEvent(call=call, text=FORGED_TEXT))], "publisher_id": "forger", "sequence": 1},
        {"items": [entry(fake_end)], "publisher_id": "forger", "sequence": 2},
        {"items": [entry(DeltaEvent(call=call, attempt=99, text=FORGED_TEXT))]},
    ]


async def streaming_run(client: Client, task_queue: str, **config: Any) -> WorkflowHandle[Any, RunResult]:
    """A run whose one LLM call streams `ANSWER` for about 1.5 s; returned once that call has started."""
    script = [turn(ANSWER, chunk_chars=8, chunk_delay_s=0.02)]
    handle = await start_run(client, task_queue, script, stream=True, stream_interval_s=0.05, **config)
    await wait_until(handle, lambda _state, trace: any(e.kind == "llm_started" for e in trace.events))
    return handle


async def send_signal(handle: WorkflowHandle[Any, Any], name: str, argument: Any) -> None:
    """Signal `name` with one argument, as any client can."""
    await handle.signal(name, argument)  # pyright: ignore[reportUnknownMemberType]
