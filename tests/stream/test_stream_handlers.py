"""A run's Workflow Stream handlers survive any payload, and only the run's own LLM call can publish.

Real dev server, real worker. Before these handlers, one publish signal of `null` (or with
`data` that is not base64 of a `Payload`) failed every later workflow task of the run: it
stayed RUNNING for good. A forged publish showed fake deltas and a fake `request_completed`
to every follower.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients.stream import TextAssembler, run_events, trace_reader
from contracts.stream import POLL_NAME, PUBLISH_SIGNAL, DeltaEvent, TraceItem
from tests.helpers import workflow_task_failures
from tests.stream_junk import (
    ANSWER,
    FORGED_TEXT,
    JUNK_POLLS,
    JUNK_PUBLISHES,
    forged_publishes,
    send_signal,
    streaming_run,
)


async def _follow(client: Client, workflow_id: str) -> list[DeltaEvent | TraceItem]:
    return [event async for event in run_events(client, workflow_id, trace_reader(client, workflow_id))]


async def test_junk_publishes_are_dropped_and_the_run_completes(client: Client, task_queue: str) -> None:
    handle = await streaming_run(client, task_queue)
    for junk in JUNK_PUBLISHES:
        await send_signal(handle, PUBLISH_SIGNAL, junk)
    await handle.signal(PUBLISH_SIGNAL)  # pyright: ignore[reportUnknownMemberType]  # no argument at all
    await handle.signal(PUBLISH_SIGNAL, args=[{"items": []}, {"items": []}])  # pyright: ignore[reportUnknownMemberType]
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.status == "completed" and result.answer == ANSWER
    assert await workflow_task_failures(handle) == []


@pytest.mark.parametrize("junk", JUNK_POLLS, ids=repr)
async def test_a_junk_poll_is_refused_by_name(client: Client, task_queue: str, junk: Any) -> None:
    handle = await streaming_run(client, task_queue)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(POLL_NAME, junk)  # pyright: ignore[reportUnknownMemberType]
    assert isinstance(refused.value.cause, ApplicationError) and refused.value.cause.type == "invalid_input"
    assert (await asyncio.wait_for(handle.result(), 60)).answer == ANSWER
    assert await workflow_task_failures(handle) == []


async def test_a_junk_poll_query_fails_only_the_query(client: Client, task_queue: str) -> None:
    handle = await streaming_run(client, task_queue)
    for junk in JUNK_POLLS:
        with pytest.raises(Exception, match="stream poll takes one object"):
            await handle.query(POLL_NAME, junk)  # pyright: ignore[reportUnknownMemberType]
    assert (await asyncio.wait_for(handle.result(), 60)).answer == ANSWER


async def test_forged_publishes_never_reach_followers(client: Client, task_queue: str) -> None:
    handle = await streaming_run(client, task_queue)
    follower = asyncio.create_task(_follow(client, handle.id))
    for forged in forged_publishes(call=0):
        await send_signal(handle, PUBLISH_SIGNAL, forged)
    events = await asyncio.wait_for(follower, 60)
    text = TextAssembler()
    deltas = [event for event in events if isinstance(event, DeltaEvent)]
    for delta in deltas:
        text.add(delta)
    assert deltas and FORGED_TEXT not in "".join(d.text for d in deltas)
    assert text.text == ANSWER  # the real deltas, all of them, nothing else
    ends = [e for e in events if isinstance(e, TraceItem) and e.event.kind == "request_completed"]
    assert len(ends) == 1 and ends[0].event.run_id != ""
    assert (await handle.result()).answer == ANSWER
