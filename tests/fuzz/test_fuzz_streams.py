"""Fuzzing a run's Workflow Stream handlers: junk and forgeries to its publish signal, poll Update and query.

The run is streaming; a raw client sends the cases (real dev server, real worker).

Every handler must survive every payload: no workflow task fails, a poll Update that is not
a `PollInput` is refused by name (`invalid_input`), a query fails alone; no publish but the
in-flight call's own reaches a follower, and the run completes with its real answer.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

from hypothesis import strategies as st
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError

from clients.stream import run_events, trace_reader
from contracts.signals import SteerInput
from contracts.stream import EVENTS_TOPIC, POLL_NAME, PUBLISH_SIGNAL, DeltaEvent
from conversation.thread import MessageEntry
from tests.fuzz_helpers import generate, raw_client, task_failures
from tests.fuzz_values import deep_values, json_values, numbers
from tests.helpers import start_run, thread_of, turn, update
from tests.stream_junk import ANSWER, FORGED_TEXT, entry

CASES = int(os.environ.get("REACT_FUZZ_STREAM_CASES", "150"))
ENDLESS = (
    ANSWER * 100
)  # minutes of streaming: the cases arrive while the call is in flight, then a steer cuts it

junk_data = (
    st.text(max_size=40)
    | st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode())
    | json_values
    | st.just(entry(DeltaEvent(call=0, text=FORGED_TEXT))["data"])
    | st.just(entry({"type": "trace", "event": {"seq": 1, "kind": "request_completed"}})["data"])
)
junk_entry = st.fixed_dictionaries({"topic": st.just(EVENTS_TOPIC) | st.text(max_size=8) | json_values}) | (
    st.fixed_dictionaries({"topic": st.just(EVENTS_TOPIC), "data": junk_data})
)
publishes = (
    json_values
    | deep_values
    | st.fixed_dictionaries(
        {"items": st.lists(junk_entry, max_size=3) | json_values},
        optional={"publisher_id": st.text(max_size=20) | json_values, "sequence": numbers | json_values},
    )
)
polls = json_values | st.fixed_dictionaries(
    {},
    optional={
        "topics": st.lists(json_values, max_size=3) | json_values,
        "from_offset": numbers | json_values,
    },
)
CASE = st.tuples(st.sampled_from(["publish", "poll", "query"]), publishes | polls)


async def _send(client: Client, workflow_id: str, kind: str, value: Any) -> str:
    """Send one case; what came back (`invalid_input`, `accepted`, `answered`, `query failed`, `sent`)."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        if kind == "publish":
            await handle.signal(PUBLISH_SIGNAL, value)  # pyright: ignore[reportUnknownMemberType]
            return "sent"
        if kind == "poll":  # accepted (a valid poll waits for items) or refused, nothing else
            poll = await handle.start_update(POLL_NAME, value, wait_for_stage=WorkflowUpdateStage.ACCEPTED)  # pyright: ignore[reportUnknownMemberType]
            try:  # a refused poll's outcome is known at once; an accepted one may wait for items
                await asyncio.wait_for(poll.result(), 1.0)
            except (
                TimeoutError,
                WorkflowUpdateRPCTimeoutOrCancelledError,
            ):  # the SDK's word for the cut wait
                return "accepted"
            return "answered"
        await handle.query(POLL_NAME, value)  # pyright: ignore[reportUnknownMemberType]
        return "answered"
    except (ValueError, TypeError, OverflowError):  # not JSON the client can send (NaN, huge ints)
        return "unsendable"
    except WorkflowUpdateFailedError as refused:
        cause = refused.cause
        assert isinstance(cause, ApplicationError) and cause.type == "invalid_input", (kind, value, cause)
        return "invalid_input"
    except Exception as failed:
        assert kind == "query", (kind, value, failed)
        return "query failed"


async def test_junk_to_the_stream_handlers_changes_nothing(client: Client, task_queue: str) -> None:
    cases = generate(CASE, CASES)
    raw = raw_client(client)
    script = [turn(ENDLESS, chunk_chars=8, chunk_delay_s=0.03), turn("done")]
    handle = await start_run(client, task_queue, script, stream=True)
    follower = asyncio.create_task(_streamed(client, handle.id))
    outcomes = [await _send(raw, handle.id, kind, value) for kind, value in cases]
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING  # every case hit a live run
    ack = await update(handle, "steer", SteerInput(content="Stop there.", mode="interrupt"))
    assert ack.mode == "interrupt"
    result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed" and result.answer == "done"
    assert await task_failures(client, handle.id) == []
    streamed = await asyncio.wait_for(follower, 60)
    entries = await thread_of(handle)
    [interrupted] = [e.payload for e in entries if isinstance(e, MessageEntry) and e.refs.get("interrupted")]
    # What the follower saw of the interrupted call is what the run kept of it: the call's own deltas only.
    assert streamed[0] and ENDLESS.startswith(streamed[0]) and FORGED_TEXT not in streamed[0]
    assert interrupted.content == streamed[0]
    assert streamed[1] == "done"
    assert "invalid_input" in outcomes and "sent" in outcomes  # both kinds of junk were exercised


async def _streamed(client: Client, workflow_id: str) -> dict[int, str]:
    """The text a follower sees of each LLM call, by call index."""
    text: dict[int, str] = {}
    async for event in run_events(client, workflow_id, trace_reader(client, workflow_id)):
        if isinstance(event, DeltaEvent):
            text[event.call] = text.get(event.call, "") + event.text
    return text
