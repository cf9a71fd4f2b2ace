"""Every answer to a busy session (`on_busy`), `expected_last_request`, and their races (real server).

The active request is held busy with a held LLM call (`tests.llm_gate`): it lasts until the
test answers it, so nothing here races the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.llm.message_cache import MessageCache
from clients import sessions
from clients.errors import RejectedError
from clients.session_ask import ask_input
from clients.sessions import Sessions
from contracts.limits import MAX_QUEUED_ASKS
from contracts.llm import LLMResponse
from contracts.session import AskAccepted
from conversation import Context, ContextOpEntry, MessageEntry
from payloads.blob_store import BlobStore
from tests.helpers import call, llm_inputs, turn, update
from tests.llm_gate import answer_llm_call, held, held_llm_call
from tests.session_helpers import (
    ask,
    ask_sync,
    new_session_id,
    replace_op,
    requests,
    session_thread,
    status,
)


def user_entries(thread: list[Any]) -> list[MessageEntry]:
    return [e for e in thread if isinstance(e, MessageEntry) and e.payload.role == "user"]


def rejection(error: pytest.ExceptionInfo[WorkflowUpdateFailedError]) -> str | None:
    cause = error.value.cause
    assert isinstance(cause, ApplicationError)
    return cause.type


async def busy(client: Client, task_queue: str, store: BlobStore, sid: str, *turns: Any) -> AskAccepted:
    """Ask "long task" and wait until its held LLM call runs."""
    accepted = await ask(client, task_queue, sid, "long task", *turns)
    await held_llm_call(client, store, accepted.run_workflow_id)
    return accepted


async def continued_as_new(
    handle: WorkflowHandle[Any, Any], run_id: str | None, timeout_s: float = 60
) -> None:
    """Until the session runs as a newer run than `run_id` (a safety-net timeout, not a measure)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (await handle.describe()).run_id == run_id:
        assert asyncio.get_running_loop().time() < deadline, "the session never continued as new"
        await asyncio.sleep(0.1)


async def test_enqueued_asks_wait_in_order_up_to_the_bound(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    first = await busy(client, task_queue, store, sid, held())
    first_run_id = (await handle.describe()).run_id
    queued = [
        await ask(client, task_queue, sid, f"queued {i}", turn(f"answer {i}"), on_busy="enqueue")
        for i in range(MAX_QUEUED_ASKS)
    ]
    assert [(a.disposition, a.position) for a in queued] == [
        ("enqueued", i + 1) for i in range(MAX_QUEUED_ASKS)
    ]
    records = await requests(handle)
    assert [r.request_id for r in records] == [first.request_id, *(a.request_id for a in queued)]
    assert all(r.finished_at is None and r.status == "running" for r in records)
    for policy in ("enqueue", "interrupt", "rollback"):
        with pytest.raises(WorkflowUpdateFailedError) as full:
            await ask(client, task_queue, sid, "one too many", turn("never"), on_busy=policy)
        assert rejection(full) == "ask_queue_full"
    again = await ask(
        client, task_queue, sid, "queued 2", turn("x"), on_busy="interrupt", request_id=queued[2].request_id
    )
    assert again == queued[2]  # a retried ask keeps its original answer, whatever on_busy says
    assert len(await requests(handle)) == MAX_QUEUED_ASKS + 1
    assert (await status(handle)).waiting_requests == MAX_QUEUED_ASKS

    await answer_llm_call(client, store, first.run_workflow_id, "first answer")
    last = await sessions.await_result(client, sid, queued[-1].request_id)
    assert (last.status, last.result) == ("completed", f"answer {MAX_QUEUED_ASKS - 1}")
    records = await requests(handle)
    assert [r.status for r in records] == ["completed"] * (MAX_QUEUED_ASKS + 1)
    assert (await status(handle)).waiting_requests == 0
    finished = [r.finished_at for r in records if r.finished_at is not None]
    assert finished == sorted(finished)
    users = [e.payload.content for e in user_entries(await session_thread(handle, store))]
    assert users == ["long task", *(f"queued {i}" for i in range(MAX_QUEUED_ASKS))]
    # The history grew past the point where the server suggests continuing as new while the asks
    # waited; the session did so only once none was left, and carried every record.
    await continued_as_new(handle, first_run_id)
    assert [r.status for r in await requests(handle)] == ["completed"] * (MAX_QUEUED_ASKS + 1)


async def test_steer_reaches_the_active_run_and_answers_with_its_result(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    first = await busy(client, task_queue, store, sid, held(), turn("final"))
    accepted = await ask(client, task_queue, sid, "be brief", on_busy="steer", request_id="steer-1")
    assert (accepted.disposition, accepted.request_id) == ("steered", first.request_id)
    assert accepted.run_workflow_id == first.run_workflow_id and accepted.input_id
    handle = client.get_workflow_handle(sid)
    session = Sessions(client, task_queue=task_queue).get(sid)
    retried = asyncio.create_task(session.ask_sync("be brief", request_id="steer-1", on_busy="steer"))
    await answer_llm_call(client, store, first.run_workflow_id, "draft")
    result = await retried
    assert (result.request_id, result.status, result.result) == (first.request_id, "completed", "final")
    users = user_entries(await session_thread(handle))
    assert [e.payload.content for e in users] == ["long task", "be brief"]
    assert users[1].refs["input_id"] == accepted.input_id
    assert [r.request_id for r in await requests(handle)] == [first.request_id]


async def test_interrupt_cancels_the_active_request_and_runs_the_new_one(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    first = await busy(client, task_queue, store, sid, held())
    deferred = await update(handle, "context_modify", replace_op("reset", "fresh start"))
    assert deferred.status == "deferred"
    queued = await ask(client, task_queue, sid, "queued", turn("queued answer"), on_busy="enqueue")
    assert (queued.disposition, queued.position) == ("enqueued", 1)
    second = await ask(client, task_queue, sid, "new question", turn("new answer"), on_busy="interrupt")
    assert (second.disposition, second.replaced_request_id) == ("interrupted", first.request_id)
    assert second.request_id != first.request_id
    old = await sessions.await_result(client, sid, first.request_id)
    new = await sessions.await_result(client, sid, second.request_id)
    assert (old.status, new.status, new.result) == ("cancelled", "completed", "new answer")
    assert (await sessions.await_result(client, sid, queued.request_id)).result == "queued answer"
    thread = await session_thread(handle)
    assert [e.payload.content for e in user_entries(thread)] == ["long task", "new question", "queued"]
    [op] = [e for e in thread if isinstance(e, ContextOpEntry)]
    assert op.payload.op_id == "reset"
    assert op.seq < next(e.seq for e in user_entries(thread) if e.payload.content == "new question")
    seen = (await llm_inputs(client.get_workflow_handle(second.run_workflow_id)))[0]
    assert [m["content"] for m in seen["messages"]] == ["fresh start", "new question"]


async def test_rollback_puts_the_lane_back_and_keeps_the_thread(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    await ask_sync(client, task_queue, sid, "hello", turn("hi"))
    before = await handle.query("context", result_type=Context)
    tool_round = turn(tool_calls=[call("calculator", {"expression": "6 * 7"})])
    first = await busy(client, task_queue, store, sid, tool_round, held())
    second = await ask(client, task_queue, sid, "instead", held(), on_busy="rollback")
    assert (second.disposition, second.replaced_request_id) == ("rolled_back", first.request_id)
    assert (await sessions.await_result(client, sid, first.request_id)).status == "cancelled"
    await held_llm_call(client, store, second.run_workflow_id)
    assert await handle.query("context", result_type=Context) == before
    thread = await session_thread(handle)
    contents = [e.payload.content for e in thread if isinstance(e, MessageEntry)]
    assert contents[:3] == ["hello", "hi", "long task"] and len(contents) >= 5  # the tool round is kept
    op = thread[-1]
    assert isinstance(op, ContextOpEntry) and op.payload.operation.type == "replace"
    assert op.payload.operation.meta == {"rollback_of": first.request_id}
    assert op.payload.operation.result_context is not None
    assert op.payload.operation.result_context.messages == before.messages
    await answer_llm_call(client, store, second.run_workflow_id, "done")
    assert (await sessions.await_result(client, sid, second.request_id)).result == "done"
    seen = (await llm_inputs(client.get_workflow_handle(second.run_workflow_id)))[0]
    assert [m["content"] for m in seen["messages"]] == ["hello", "hi", "instead"]


async def test_stale_asks_are_refused_and_recorded_nowhere(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    with pytest.raises(WorkflowUpdateFailedError) as none_yet:
        await ask(client, task_queue, sid, "hi", turn("x"), expected_last_request="someone")
    assert rejection(none_yet) == "stale"
    assert await requests(handle) == []
    first = await ask_sync(client, task_queue, sid, "one", turn("1"))
    length = (await status(handle)).thread_length
    for policy in ("reject", "enqueue"):
        with pytest.raises(WorkflowUpdateFailedError) as stale:
            await ask(
                client, task_queue, sid, "two", turn("2"), expected_last_request="other", on_busy=policy
            )
        assert rejection(stale) == "stale"
    assert [r.request_id for r in await requests(handle)] == [first.request_id]
    assert (await status(handle)).thread_length == length
    second = await ask(client, task_queue, sid, "two", turn("2"), expected_last_request=first.request_id)
    assert second.disposition == "started"
    assert (await sessions.await_result(client, sid, second.request_id)).result == "2"


async def held_answer(
    client: Client, store: BlobStore, workflow_id: str, content: str
) -> Callable[[], Awaitable[None]]:
    """What answers the workflow's held LLM call, prepared (`answer_llm_call` in one RPC, when called)."""
    activity_id = await held_llm_call(client, store, workflow_id)
    response = LLMResponse(content=content, finish_reason="stop", model="scripted")
    await MessageCache(store).remember(response.assistant_message())
    activity = client.get_async_activity_handle(workflow_id=workflow_id, run_id=None, activity_id=activity_id)
    return lambda: activity.complete(response)


@pytest.mark.parametrize("answer_first", [False, True], ids=["together", "answer-first"])
@pytest.mark.parametrize("policy", ["steer", "interrupt", "rollback", "enqueue"])
async def test_an_ask_racing_the_end_of_the_active_run(
    client: Client, task_queue: str, store: BlobStore, policy: str, answer_first: bool
) -> None:
    """The run's last LLM call ends as the ask arrives: either way the query runs once, nothing wedges."""
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    first = await busy(client, task_queue, store, sid, held(), turn("after steer"))
    answer = await held_answer(client, store, first.run_workflow_id, "first answer")
    racing = ask(client, task_queue, sid, "racing", turn("second answer"), on_busy=policy, request_id="race")
    if answer_first:  # the run ends while the ask is on its way: it meets a run that has just ended
        await answer()
        accepted = await racing
    else:
        _, accepted = await asyncio.gather(answer(), racing)
    old = await sessions.await_result(client, sid, first.request_id)
    answered = await sessions.await_result(client, sid, accepted.request_id)
    users = [e.payload.content for e in user_entries(await session_thread(handle))]
    assert users.count("racing") == 1  # the query went to exactly one run, once
    records = await requests(handle)
    if accepted.disposition == "steered":
        assert accepted.request_id == first.request_id and answered.result == "after steer"
        assert [r.request_id for r in records] == [first.request_id]
    else:
        assert accepted.request_id == "race" and (answered.status, answered.result) == (
            "completed",
            "second answer",
        )
        assert [r.request_id for r in records] == [first.request_id, "race"]
        replaced = accepted.disposition in ("interrupted", "rolled_back")
        assert old.status == ("cancelled" if replaced else "completed")
        expected = {"steer": {"started"}, "enqueue": {"started", "enqueued"}}
        assert accepted.disposition in expected.get(policy, {"started", policy + "ed", "rolled_back"})
        ops = [e for e in await session_thread(handle) if isinstance(e, ContextOpEntry)]
        assert len(ops) == (1 if accepted.disposition == "rolled_back" else 0)
    assert (await status(handle)).state == "idle"


async def test_unknown_on_busy_is_invalid_input_and_changes_nothing(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    with pytest.raises(RejectedError) as local:
        ask_input("hi", on_busy="shout")
    assert local.value.code == "invalid_input"
    sid = new_session_id()
    handle = client.get_workflow_handle(sid)
    first = await busy(client, task_queue, store, sid, held())
    with pytest.raises(WorkflowUpdateFailedError) as remote:
        bad = {"query": "hi", "on_busy": "shout"}
        await handle.execute_update("ask", bad, result_type=AskAccepted)  # pyright: ignore[reportUnknownMemberType]
    assert rejection(remote) == "invalid_input"
    assert [r.request_id for r in await requests(handle)] == [first.request_id]
    await answer_llm_call(client, store, first.run_workflow_id, "done")
    assert (await sessions.await_result(client, sid, first.request_id)).result == "done"
