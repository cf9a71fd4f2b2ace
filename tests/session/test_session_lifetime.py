"""AgentSession over a long life: continue-as-new, snapshots, request retention (real server)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients import sessions
from clients.sessions import Sessions
from contracts import Ack
from contracts.session import (
    MAX_KEPT_REQUESTS,
    AskInput,
    ExportInput,
    ExportResult,
    RequestRecord,
    SessionInput,
)
from conversation import Context, ContextModifyInput, MessageEntry
from payloads.blob_store import BlobStore
from tests.conftest import SUGGEST_CAN_AT
from tests.helpers import llm_inputs, turn, workflow_exists
from tests.session_helpers import ask, ask_sync, config, new_session_id, requests, script, session_thread


async def continue_as_new_hops(client: Client, session_id: str) -> int:
    """How many times the session continued as new: walk back from the latest run to the first."""
    hops = 0
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(session_id)
    while True:
        history = await handle.fetch_history()
        previous = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            return hops
        hops += 1
        handle = client.get_workflow_handle(session_id, run_id=previous)


async def carried_usage_rows(client: Client, session_id: str) -> list[int]:
    """How many unwritten usage rows each continued run of the session was handed, latest first."""
    counts: list[int] = []
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(session_id)
    while True:
        started = (await handle.fetch_history()).events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return counts
        (session_input,) = await client.data_converter.decode(started.input.payloads, [SessionInput])
        assert isinstance(session_input, SessionInput) and session_input.carry is not None
        counts.append(len(session_input.carry.unwritten_usage))
        handle = client.get_workflow_handle(session_id, run_id=started.continued_execution_run_id)


async def usage_rows_written(session_id: str, expected: int) -> int:
    """How many usage rows of the session the tests' store holds, once `expected` are (or 20 s passed)."""
    path = os.environ["REACT_STORE_URL"].removeprefix("sqlite:///")
    written = 0
    for _ in range(200):
        with sqlite3.connect(path) as db:
            (written,) = db.execute(
                "SELECT count(*) FROM usage_requests WHERE session_id = ?", (session_id,)
            ).fetchone()
        if written >= expected:
            break
        await asyncio.sleep(0.1)
    return written


async def test_long_conversation_continues_as_new_losing_and_duplicating_nothing(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    turns = 20
    first = await ask(client, task_queue, sid, "turn 0", turn("answer 0"), request_id="req-0")
    await sessions.await_result(client, sid, first.request_id)
    handle = client.get_workflow_handle(sid)
    switch = ContextModifyInput.model_validate(
        {"op_id": "lane-x", "context_ref": "default", "operation": {"type": "switch"}}
    )
    assert (await sessions.update(handle, "context_modify", switch, Ack)).status == "applied"
    for i in range(1, turns):
        record = await ask_sync(client, task_queue, sid, f"turn {i}", turn(f"answer {i}"))
        assert record.result == f"answer {i}"
    hops = await continue_as_new_hops(client, sid)
    assert hops >= 1, f"no continue-as-new in {turns} turns with suggestContinueAsNew={SUGGEST_CAN_AT}"
    # An op id applied before continue-as-new is still deduplicated after it.
    assert (await sessions.update(handle, "context_modify", switch, Ack)).status == "duplicate"
    thread = await session_thread(handle, store)
    assert [e.seq for e in thread] == list(range(2 * turns + 1))
    contents = [e.payload.content for e in thread if isinstance(e, MessageEntry)]
    assert contents == [c for i in range(turns) for c in (f"turn {i}", f"answer {i}")]
    assert [r.query_preview for r in await requests(handle)] == [f"turn {i}" for i in range(turns)]
    # An ask retried with the same request id after continue-as-new is answered, not run again.
    again = await ask(client, task_queue, sid, "turn 0", turn("must not run"), request_id="req-0")
    assert again == first
    assert len(await session_thread(handle, store)) == 2 * turns + 1
    # Asked again as soon as each answer came, the session still continued as new: the usage rows
    # written aside were carried unwritten when it did, and the next run wrote them, each once.
    assert any(await carried_usage_rows(client, sid))
    assert await usage_rows_written(sid, turns) == turns
    # The memo listings read went through continue-as-new: the first message's title, the last use.
    memo = await (await handle.describe()).memo()
    assert memo["title"] == "turn 0" and memo["last_request"]["status"] == "completed"
    assert (
        timedelta(0) < datetime.now(UTC) - datetime.fromisoformat(memo["last_used_at"]) < timedelta(minutes=5)
    )


async def test_export_then_restore_gives_the_same_context(client: Client, task_queue: str) -> None:
    source = new_session_id()
    await ask_sync(client, task_queue, source, "remember 17", turn("noted: 17"))
    handle = client.get_workflow_handle(source)
    exported: ExportResult = await sessions.update(handle, "export", ExportInput(ttl_s=600), ExportResult)
    assert exported.token.startswith("rt2.") and exported.expires_at is not None
    original = await handle.query("context", result_type=Context)

    target = new_session_id()
    accepted = await sessions.ask(
        client,
        target,
        AskInput(query="what did I say?", overrides=script(turn("you said 17"))),
        agent_id="test-agent",
        config=config(system_prompt="You are a test agent."),
        snapshot=exported.token,
        task_queue=task_queue,
    )
    record: RequestRecord = await sessions.await_result(client, target, accepted.request_id)
    assert record.result == "you said 17"
    restored_thread = await session_thread(client.get_workflow_handle(target))
    restore = restored_thread[0]
    assert restore.kind == "ai_context_operation" and restore.payload.operation.reason == "restore"
    assert restore.payload.operation.result_context == original
    # The new session's first run saw the restored conversation.
    seen = (await llm_inputs(client.get_workflow_handle(accepted.run_workflow_id)))[0]
    assert [m["content"] for m in seen["messages"]] == [
        *(m.content for m in original.messages),
        "what did I say?",
    ]
    context = await client.get_workflow_handle(target).query("context", result_type=Context)
    assert context.messages[: len(original.messages)] == original.messages


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("rt1.abc.def", "snapshot_prefix"),
        ("rt2.only-one-part", "snapshot_format"),
        ("rt2.@@@.###", "snapshot_encoding"),
    ],
)
async def test_a_bad_snapshot_fails_the_session_start_with_its_named_error(
    client: Client, task_queue: str, token: str, code: str
) -> None:
    handle = await client.start_workflow(
        "AgentSession",
        SessionInput(agent_id="a", config=config(), snapshot=token),
        id=new_session_id(),
        task_queue=task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == code and cause.non_retryable


async def test_an_ask_that_creates_a_session_from_a_bad_snapshot_gets_the_named_error(
    client: Client, task_queue: str
) -> None:
    sid = new_session_id()
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await sessions.ask(
            client,
            sid,
            AskInput(query="hi"),
            agent_id="a",
            config=config(),
            snapshot="rt2.@@@.###",
            task_queue=task_queue,
        )
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "snapshot_encoding"
    with pytest.raises(WorkflowFailureError):
        await client.get_workflow_handle(sid).result()


async def test_the_last_hundred_requests_are_kept(client: Client, task_queue: str, store: BlobStore) -> None:
    sid = new_session_id()
    total = MAX_KEPT_REQUESTS + 3
    for i in range(total):
        await ask_sync(client, task_queue, sid, f"q{i}", turn(f"a{i}"))
    handle = client.get_workflow_handle(sid)
    kept = await requests(handle)
    assert [r.query_preview for r in kept] == [f"q{i}" for i in range(3, total)]
    assert all(r.status == "completed" for r in kept)
    assert len(await session_thread(handle, store)) == 2 * total  # the thread itself keeps everything


async def test_erasing_a_session_that_continued_as_new_deletes_every_execution_and_run(
    client: Client, task_queue: str
) -> None:
    sid = new_session_id()
    session = Sessions(client, task_queue=task_queue).get(sid)
    run_ids: list[str] = []
    for i in range(30):  # until it has continued as new (the tests' server suggests it at 120 events)
        record = await ask_sync(client, task_queue, sid, f"turn {i}", turn(f"answer {i}"))
        run_ids.append(record.run_workflow_id)
        if i >= 1 and await continue_as_new_hops(client, sid):
            break
    hops = await continue_as_new_hops(client, sid)
    assert hops >= 1
    erased = await session.delete()
    assert sorted(erased.runs) == sorted(run_ids)
    assert erased.executions == len(run_ids) + hops + 1  # every run, and every execution of the session
    for workflow_id in [sid, *run_ids]:
        assert await gone(client, workflow_id), workflow_id


async def gone(client: Client, workflow_id: str) -> bool:
    """Whether, within 60 s, Temporal neither describes nor lists any execution of `workflow_id`."""
    for _ in range(600):
        listed = [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
        if not listed and not await workflow_exists(client, workflow_id):
            return True
        await asyncio.sleep(0.1)
    return False
