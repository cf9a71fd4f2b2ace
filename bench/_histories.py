"""Reading a session's histories back for `bench.long_session`.

Bytes per turn, continues-as-new, failed workflow tasks, and payloads stored by reference.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.client import Client

from payloads.blob_store import BlobStore

CLAIM_REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()
BENIGN_TASK_FAILURE = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
"""The server refusing a completion because new input arrived: Temporal's normal flow, not a defect."""


async def payload_data(payload: Payload, store: BlobStore) -> bytes:
    """A payload's data, read from the payload store when history holds only its claim-check reference."""
    from payloads.claim_check import CLAIM_KEY, BlobStoreDriver

    if payload.metadata.get("messageType") != CLAIM_REFERENCE_TYPE:
        return payload.data
    reference = json_format.Parse(payload.data, ExternalStorageReference())
    return (await BlobStoreDriver(store).load(reference.claim_data[CLAIM_KEY])).data


def task_failures(events: list[HistoryEvent]) -> int:
    """Failed workflow tasks in a history, benign causes left out."""
    return sum(
        event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and event.workflow_task_failed_event_attributes.cause != BENIGN_TASK_FAILURE
        for event in events
    )


def _event_name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


@dataclass
class Histories:
    """What the histories say, by turn."""

    session_bytes: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    child_bytes: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    continued: list[tuple[int, int, bool]] = field(default_factory=lambda: [])
    """(turn, full input bytes, claim-checked) of each continue-as-new."""
    task_failures: int = 0
    last_turn: Counter[str] = field(default_factory=lambda: Counter[str]())
    """Bytes of the last turn's events, by workflow and event type."""


async def read_histories(client: Client, session_id: str, children: list[str], store: BlobStore) -> Histories:
    """Attribute every session event to the turn whose ask it follows; children are one turn each."""
    found = Histories()
    runs: list[list[HistoryEvent]] = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(session_id, run_id=run_id).fetch_history()
        runs.append(list(history.events))
        run_id = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not run_id:
            break
    asks = 0
    for events in reversed(runs):
        found.task_failures += task_failures(events)
        for event in events:
            accepted = event.workflow_execution_update_accepted_event_attributes
            if (
                event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
                and accepted.accepted_request.input.name == "ask"
            ):
                asks += 1
            turn = max(asks - 1, 0)
            found.session_bytes[turn] += event.ByteSize()
            if turn == len(children) - 1:
                found.last_turn[f"session {_event_name(event)}"] += event.ByteSize()
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                [payload] = event.workflow_execution_continued_as_new_event_attributes.input.payloads
                full = len(await payload_data(payload, store))
                found.continued.append(
                    (turn, full, payload.metadata.get("messageType") == CLAIM_REFERENCE_TYPE)
                )
    limit = asyncio.Semaphore(8)

    async def child(turn: int, workflow_id: str) -> None:
        async with limit:
            events = list((await client.get_workflow_handle(workflow_id).fetch_history()).events)
        found.child_bytes[turn] = sum(event.ByteSize() for event in events)
        if turn == len(children) - 1:
            for event in events:
                found.last_turn[f"run {_event_name(event)}"] += event.ByteSize()
        found.task_failures += task_failures(events)

    await asyncio.gather(*(child(turn, workflow_id) for turn, workflow_id in enumerate(children)))
    return found
