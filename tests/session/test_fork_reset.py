"""Forking a session at a seq and resetting its thread, against a real server (client and CLI)."""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from clients.sessions import Sessions
from contracts.session import ForkOrigin
from conversation import ContextOpEntry, Message, MessageEntry
from tests.cli.test_cli_follow import cli
from tests.conversation.test_context_policy import session_runs
from tests.helpers import call, llm_inputs, turn, update_names, workflow_exists
from tests.run.test_state_effects import STATE_TOOLS, effect
from tests.session_helpers import config, new_session_id, script

PROMPT = "You are a test agent."


def messages_of(context_messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in context_messages]


async def two_turns(client: Client, task_queue: str) -> SessionHandle:
    """A session with six entries: #0 first question, #1 first answer, ... #5 second answer."""
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = config(system_prompt=PROMPT, tools=STATE_TOOLS, effect_policy=["*"])
    first = await session.ask_sync("first question", config=agent, overrides=script(turn("first answer")))
    second = await session.ask_sync(
        "second question",
        overrides=script(
            turn(tool_calls=[call("change_state", effect("set", "topic", "forks"), "c1")]),
            turn("second answer"),
        ),
    )
    assert first.status == second.status == "completed"
    return session


async def model_input_of(client: Client, session: SessionHandle, request_id: str) -> str:
    """The first LLM call's input of a request's run, as JSON text (what the model saw)."""
    record = await session.request(request_id)
    return json.dumps((await llm_inputs(client.get_workflow_handle(record.run_workflow_id)))[0])


async def test_a_fork_starts_from_the_projection_at_its_seq_and_goes_its_own_way(
    client: Client, task_queue: str
) -> None:
    parent = await two_turns(client, task_queue)
    parent_context = await parent.context()
    parent_length = (await parent.status()).thread_length
    assert parent_length == 6
    forked = await parent.fork(seq=1)
    assert forked.session_id == f"{parent.workflow_id}-fork-1"
    assert forked.forked_from == ForkOrigin(parent_id=parent.workflow_id, seq=1)
    child = Sessions(client, task_queue=task_queue).get(forked.session_id)
    status = await child.status()
    assert status.forked_from == forked.forked_from and status.config.effect_policy == ["*"]
    context = await child.context()
    assert context.system_prompt == PROMPT
    assert messages_of(context.messages) == [("user", "first question"), ("assistant", "first answer")]
    # The state forks with it (the state as it is now: the parent's second ask set it).
    assert await child.agent_state() == {"topic": "forks"}
    [seed] = [entry async for entry in child.thread()]
    assert isinstance(seed, ContextOpEntry) and seed.payload.operation.reason == "system"
    assert seed.payload.operation.meta == {"forked_from": parent.workflow_id, "fork_seq": 1}

    answered = await child.ask_sync("third question", overrides=script(turn("third answer")))
    assert answered.result == "third answer"
    seen = await model_input_of(client, child, answered.request_id)
    assert "first answer" in seen and "third question" in seen and "second question" not in seen
    assert messages_of((await child.context()).messages)[-2:] == [
        ("user", "third question"),
        ("assistant", "third answer"),
    ]
    # The parent is unchanged.
    assert await parent.context() == parent_context
    assert (await parent.status()).thread_length == parent_length
    assert (await parent.status()).forked_from is None


async def test_a_fork_at_the_latest_seq_copies_the_whole_lane(client: Client, task_queue: str) -> None:
    parent = await two_turns(client, task_queue)
    forked = await parent.fork(session_id=f"{parent.workflow_id}-branch")
    assert forked.session_id == f"{parent.workflow_id}-branch" and forked.forked_from.seq == 5
    child = Sessions(client, task_queue=task_queue).get(forked.session_id)
    assert await child.context() == await parent.context()
    # A generated id after an explicit one counts on.
    again = await parent.fork(seq=0)
    assert again.session_id == f"{parent.workflow_id}-fork-2"
    first_only = await Sessions(client, task_queue=task_queue).get(again.session_id).context()
    assert messages_of(first_only.messages) == [("user", "first question")]
    with pytest.raises(RejectedError) as taken:
        await parent.fork(session_id=forked.session_id)
    assert taken.value.code == "invalid_input" and "already runs" in taken.value.message


async def test_a_fork_beyond_the_thread_is_refused_and_starts_nothing(
    client: Client, task_queue: str
) -> None:
    parent = await two_turns(client, task_queue)
    with pytest.raises(RejectedError) as refused:
        await parent.fork(seq=6)
    assert refused.value.code == "seq_out_of_range" and "last seq is 5" in refused.value.message
    with pytest.raises(RejectedError) as negative:
        await parent.fork(seq=-2)
    assert negative.value.code == "invalid_input"
    handle = client.get_workflow_handle(parent.workflow_id)
    with pytest.raises(WorkflowUpdateFailedError) as raw:
        await handle.execute_update("fork", {"seq": -2})  # pyright: ignore[reportUnknownMemberType]
    assert isinstance(raw.value.cause, ApplicationError) and raw.value.cause.type == "invalid_input"
    assert "fork" not in await update_names(handle)  # refused by the validator: no trace in history
    assert not await workflow_exists(client, f"{parent.workflow_id}-fork-1")
    assert (await parent.status()).thread_length == 6


async def test_a_fork_beyond_the_thread_while_a_request_runs_is_refused_without_waiting_for_it(
    client: Client, task_queue: str
) -> None:
    parent = await two_turns(client, task_queue)
    running = await parent.ask("take long", overrides=script(turn("late", delay_s=60)))
    started = asyncio.get_running_loop().time()
    with pytest.raises(RejectedError) as refused:  # accepted while the run runs, refused ~1 s later
        await parent.fork(seq=4611686018427387904)
    assert refused.value.code == "seq_out_of_range"
    assert asyncio.get_running_loop().time() - started < 15  # not held until the 60 s run ends
    assert (await parent.status()).active_request_id == running.request_id
    assert (await parent.cancel("done")).status == "accepted"
    assert not await workflow_exists(client, f"{parent.workflow_id}-fork-1")


async def test_reset_when_idle_starts_afresh_and_the_thread_keeps_the_old_entries(
    client: Client, task_queue: str
) -> None:
    session = await two_turns(client, task_queue)
    ack = await session.reset_thread(reason="new topic", op_id="reset-1")
    assert ack.status == "applied" and ack.op_id == "reset-1"
    assert (await session.reset_thread(op_id="reset-1")).status == "duplicate"
    context = await session.context()
    assert context.messages == [] and context.system_prompt == PROMPT
    answered = await session.ask_sync("fresh question", overrides=script(turn("fresh answer")))
    seen = await model_input_of(client, session, answered.request_id)
    assert "fresh question" in seen and "first question" not in seen and "second answer" not in seen
    thread = [entry async for entry in session.thread()]
    contents = [e.payload.content for e in thread if isinstance(e, MessageEntry)]
    assert contents[:2] == ["first question", "first answer"] and contents[-1] == "fresh answer"
    [reset] = [e for e in thread if isinstance(e, ContextOpEntry)]
    assert reset.seq == 6 and reset.payload.operation.type == "replace"
    assert reset.payload.operation.meta == {"reset": True, "reason": "new topic"}
    assert await session.agent_state() == {"topic": "forks"}  # a reset restarts the conversation only


async def test_reset_while_a_request_runs_waits_for_its_end(client: Client, task_queue: str) -> None:
    session = await two_turns(client, task_queue)
    slow = await session.ask("slow question", overrides=script(turn("slow answer", delay_s=2.0)))
    ack = await session.reset_thread()
    assert ack.status == "deferred"
    assert messages_of((await session.context()).messages)[0] == ("user", "first question")
    done = await session.await_result(slow.request_id)
    assert done.result == "slow answer"
    thread = [entry async for entry in session.thread()]
    assert isinstance(thread[-1], ContextOpEntry) and thread[-1].payload.operation.meta == {"reset": True}
    assert [e.payload.content for e in thread[-3:-1] if isinstance(e, MessageEntry)] == [
        "slow question",
        "slow answer",
    ]
    assert (await session.context()).messages == []


async def test_cli_fork_reset_and_status(client: Client, task_queue: str) -> None:
    session = await two_turns(client, task_queue)
    sid = session.workflow_id
    forked = await cli(client, "fork", sid, "--seq", "1", "--id", f"{sid}-cli")
    assert forked.code == 0 and forked.out.strip() == f"forked {sid} at seq 1: {sid}-cli", forked.err
    shown = await cli(client, "status", f"{sid}-cli")
    assert shown.code == 0 and f"{sid} at seq 1" in shown.out and '"topic": "forks"' in shown.out, shown.err
    beyond = await cli(client, "fork", sid, "--seq", "60")
    assert beyond.code == 1 and "seq_out_of_range" in beyond.out + beyond.err
    reset = await cli(client, "reset", sid, "--reason", "again", "--op-id", "cli-reset")
    assert reset.code == 0 and reset.out.startswith("applied cli-reset"), reset.err
    assert (await session.context()).messages == []


async def test_a_fork_at_an_archived_seq_reads_the_archive_back(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    # A budget wide enough that the lane window keeps every turn (a fork's projection is windowed too).
    agent = config(system_prompt=PROMPT, context_policy={"max_input_tokens": 400_000})
    for n in range(5):  # 300 KB a turn: the fifth ask's run starts with over 1 MiB in memory, archived
        question, answer = f"question {n} " * 5_000, f"answer {n} " * 25_000
        await session.ask_sync(question, config=agent, overrides=script(turn(answer)))
    assert (await session.status()).archived_entries > 2
    forked = await session.fork(seq=2)
    context = await Sessions(client, task_queue=task_queue).get(forked.session_id).context()
    assert [m.content[:11] for m in context.messages] == ["question 0 ", "answer 0 an", "question 1 "]
    assert context.messages[1].content == "answer 0 " * 25_000
    read = [  # in any of the session's runs: it may continue as new before or after the fork
        e.activity_task_scheduled_event_attributes.activity_type.name
        for run in await session_runs(client, session.workflow_id)
        for e in run
        if e.activity_task_scheduled_event_attributes.activity_type.name == "read_segment"
    ]
    assert read == ["read_segment"]


async def test_a_fork_right_after_a_run_ends_sees_the_run_s_entries(client: Client, task_queue: str) -> None:
    # The SDK applies an Update before its activation's other jobs: a fork that comes with the
    # run's end must still see what the run appended (it used to be refused: the thread looked empty).
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask("only question", config=config(), overrides=script(turn("only answer")))
    for _ in range(400):  # the status query, not an Update: the fork is the first Update after the run
        if (status := await session.status()).state == "idle" and status.thread_length == 2:
            break
        await asyncio.sleep(0.02)
    forked = await session.fork(seq=1)
    assert forked.forked_from.seq == 1
    child = Sessions(client, task_queue=task_queue).get(forked.session_id)
    assert messages_of((await child.context()).messages) == [
        ("user", "only question"),
        ("assistant", "only answer"),
    ]
