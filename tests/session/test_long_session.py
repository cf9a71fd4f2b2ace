"""A long conversation keeps working: 60 turns of 10 KB questions and 30 KB answers (real server).

Before issue 7 a session like this wedged at ask 21: its continue-as-new input carried
the thread, every lane's context, the request records and traces (2.7 MB). Now the
session archives its older entries in the payload store and carries their references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from contracts.session import SessionInput
from conversation import MessageEntry
from payloads.blob_store import BlobStore
from tests.helpers import claim_digest_of, payload_data, turn, workflow_task_failures
from tests.session_helpers import ask, new_session_id, requests, session_thread
from workflows.session.thread import ARCHIVE_CHARS, LANE_WINDOW_MIN_CHARS

TURNS = 60
QUESTION_CHARS = 10_000
ANSWER_CHARS = 30_000
CARRY_SLACK = 256 * 1024
"""Room over the in-memory tail and the lane window for config, request records and JSON overhead."""


def text(label: str, size: int) -> str:
    """`size` characters starting with `label`, different for every label (no two entries alike)."""
    words = f"{label} lorem ipsum dolor sit amet consectetur {hash(label) % 9973} "
    return (label + ": " + words * (size // len(words) + 1))[:size]


def question(i: int) -> str:
    return text(f"question {i}", QUESTION_CHARS)


def answer(i: int) -> str:
    return text(f"answer {i}", ANSWER_CHARS)


@dataclass
class SessionRun:
    """One run of the session workflow (the chain of continue-as-new) as history stores it."""

    run_id: str
    input_stored_bytes: int
    input_decoded_bytes: int
    claim_checked: bool
    history_bytes: int
    task_failures: list[str]


async def session_runs(client: Client, session_id: str, store: BlobStore) -> list[SessionRun]:
    """Every run of the session, oldest first, with the size of the input it started with."""
    runs: list[SessionRun] = []
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(session_id)
    while True:
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        [payload] = started.input.payloads
        decoded = await payload_data(payload, store)
        SessionInput.model_validate_json(decoded)  # the carry decodes
        runs.append(
            SessionRun(
                run_id=handle.run_id or "",
                input_stored_bytes=payload.ByteSize(),
                input_decoded_bytes=len(decoded),
                claim_checked=claim_digest_of(payload) is not None,
                history_bytes=sum(event.ByteSize() for event in history.events),
                task_failures=[
                    e.workflow_task_failed_event_attributes.failure.message
                    for e in history.events
                    if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
                ],
            )
        )
        previous = started.continued_execution_run_id
        if not previous:
            return runs[::-1]
        handle = client.get_workflow_handle(session_id, run_id=previous)


async def test_sixty_turns_of_forty_kilobytes_keep_working(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    for i in range(TURNS):
        accepted = await ask(client, task_queue, sid, question(i), turn(answer(i)))
        from clients import sessions

        record = await sessions.await_result(client, sid, accepted.request_id)
        assert record.status == "completed", f"ask {i}: {record.outcome}"
        assert record.result == answer(i), f"ask {i} returned another answer"

    thread = await session_thread(handle, store)
    assert [e.seq for e in thread] == list(range(2 * TURNS))
    assert all(isinstance(e, MessageEntry) for e in thread)
    expected = [text for i in range(TURNS) for text in (question(i), answer(i))]
    assert [e.payload.content for e in thread if isinstance(e, MessageEntry)] == expected
    assert [e.payload.role for e in thread if isinstance(e, MessageEntry)] == ["user", "assistant"] * TURNS

    runs = await session_runs(client, sid, store)
    assert len(runs) >= 2, "the session never continued as new"
    for run in runs:
        assert run.task_failures == [], f"session run {run.run_id}: {run.task_failures[:1]}"
    records = await requests(handle)
    assert len(records) == TURNS and all(r.status == "completed" for r in records)
    for record in records:
        failures = await workflow_task_failures(client.get_workflow_handle(record.run_workflow_id))
        assert failures == [], f"run {record.run_workflow_id}: {failures[:1]}"

    # What continue-as-new carries is bounded by the in-memory tail and the lane window, not
    # by the conversation: the 2.4 MB thread is mostly in archived segments.
    carries = [run.input_decoded_bytes for run in runs[1:]]
    bound = ARCHIVE_CHARS + LANE_WINDOW_MIN_CHARS + CARRY_SLACK
    assert max(carries) < bound, f"continue-as-new inputs {carries} (bound {bound})"
    status = await handle.query("status", result_type=dict[str, Any])
    assert status["archived_entries"] > 0, "nothing was archived"
    print(f"\ncontinue-as-new inputs (decoded bytes): {carries}")
    print(f"as stored in history: {[run.input_stored_bytes for run in runs[1:]]}")
    print(f"history bytes per session run: {[run.history_bytes for run in runs]}")
