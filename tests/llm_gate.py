"""Held LLM calls: a scripted turn that lasts until the test answers it, so a test never races the clock.

A held turn's scripted delay (`HELD_S`) is only a safety net. The test answers the call when it
is ready: it caches the answer's message as the LLM activity does (the run's next call refers to
it by digest) and completes the pending `llm_call` activity through Temporal, as any external
system may complete an activity. The workflow sees an ordinary completed LLM call; the worker's
own attempt is cancelled at its next heartbeat (the server no longer knows it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.history.v1 import ActivityTaskScheduledEventAttributes, HistoryEvent
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.llm.message_cache import MessageCache
from contracts.activities import LLM_ACTIVITY
from contracts.agent import ScriptTurn
from contracts.llm import LLMRequest, LLMResponse
from payloads.blob_store import BlobStore
from tests.helpers import payload_data, turn

HELD_S = 1_800.0
"""The held turn's scripted delay: longer than the LLM call's timeout, so it never answers by itself.

Each attempt times out (`llm_timeout_s`) and the retry is held again (the test answers whichever
attempt runs); a test that never answers fails when the call's attempts run out, it does not hang."""


def held(content: str | None = None, **fields: Any) -> ScriptTurn:
    """A scripted turn the test answers itself (`answer_llm_call`)."""
    return turn(content, delay_s=HELD_S, **fields)


async def running_llm_calls(client: Client, workflow_id: str) -> set[str]:
    """The activity ids of the workflow's LLM calls that a worker runs now (none before it exists)."""
    try:
        description = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:  # a session's run that has not started yet
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        return set()
    started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    pending: list[PendingActivityInfo] = list(description.raw_description.pending_activities)
    return {a.activity_id for a in pending if a.activity_type.name == LLM_ACTIVITY and a.state == started}


async def is_held(scheduled: ActivityTaskScheduledEventAttributes, store: BlobStore) -> bool:
    """Whether the scheduled LLM call's scripted turn is a held one (its input in history says so)."""
    request = LLMRequest.model_validate_json(await payload_data(scheduled.input.payloads[0], store))
    return (
        request.scripted is not None
        and request.scripted.turn is not None
        and request.scripted.turn.delay_s == HELD_S
    )


async def held_llm_call(client: Client, store: BlobStore, workflow_id: str, timeout_s: float = 300) -> str:
    """The activity id of the workflow's held LLM call, once a worker runs it.

    Only a call whose scripted turn is held counts: an ordinary call that happens to be running
    is left to the scripted model. `timeout_s` is a safety net (a loaded machine), not what a
    test measures.
    """
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        running = await running_llm_calls(client, workflow_id)
        if running:
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            events: list[HistoryEvent] = list(history.events)
            for event in events:
                scheduled = event.activity_task_scheduled_event_attributes
                if scheduled.activity_id in running and await is_held(scheduled, store):
                    return scheduled.activity_id
        assert asyncio.get_running_loop().time() < deadline, (
            f"{workflow_id}: no held LLM call in {timeout_s}s"
        )
        await asyncio.sleep(0.1)


async def answer_llm_call(client: Client, store: BlobStore, workflow_id: str, content: str) -> None:
    """Answer the workflow's held LLM call with `content` now (waiting for it to start)."""
    activity_id = await held_llm_call(client, store, workflow_id)
    response = LLMResponse(content=content, finish_reason="stop", model="scripted")
    await MessageCache(store).remember(response.assistant_message())
    activity = client.get_async_activity_handle(workflow_id=workflow_id, run_id=None, activity_id=activity_id)
    await activity.complete(response)
