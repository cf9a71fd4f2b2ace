"""Workflow ids at their bounds, and forks a clumsy client makes: against a real server (issue 23).

Every id the product derives stays under Temporal's 1,000-byte limit, however long the id it
grows from (`contracts.workflow_ids`); a session id no session may have is refused by name; a
fork's blank id is refused; concurrent default-id forks all succeed; a fork's lane follows the
fork's own `set_system_prompt`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients.errors import RejectedError
from clients.runs import Runs
from clients.sessions import Sessions
from contracts import RunResult
from contracts.session import AskInput, SessionInput
from contracts.workflow_ids import MAX_SESSION_ID_CHARS, MAX_WORKFLOW_ID_BYTES, bounded_id
from testing import answer, call_tools, scripted_agent, tool_call
from tests.helpers import llm_inputs, turn
from tests.session_helpers import config, new_session_id, script


def long_id(length: int) -> str:
    """A fresh id of exactly `length` characters (ASCII: as many bytes)."""
    head = f"long-{uuid.uuid4().hex[:10]}-"
    return head + "x" * (length - len(head))


def agent_calling_agent() -> dict[str, Any]:
    """A config whose model calls the agent `helper` once, then answers with its result."""
    helper = scripted_agent(answer("helped"))
    return {
        "agents": [{"name": "helper", "config": helper.model_dump(mode="json")}],
    }


async def test_a_run_with_a_995_character_id_calls_an_agent(client: Client, task_queue: str) -> None:
    run_id = long_id(995)
    agent = scripted_agent(
        call_tools(tool_call("helper", {"query": "help me"}, call_id="h1")),
        answer("done"),
        **agent_calling_agent(),
    )
    result = await (await Runs(client, task_queue=task_queue).start("go", agent, workflow_id=run_id)).result()
    assert result.status == "completed" and result.result == "done"
    child_id = bounded_id(run_id, "/agent-1", max_chars=MAX_WORKFLOW_ID_BYTES)
    assert len(child_id.encode()) <= MAX_WORKFLOW_ID_BYTES and child_id.endswith("/agent-1")
    child = await client.get_workflow_handle(child_id, result_type=RunResult).result()
    assert child.result == "helped"


async def test_a_session_id_no_session_may_have_is_refused_by_name(client: Client, task_queue: str) -> None:
    sessions = Sessions(client, task_queue=task_queue)
    for bad in ["", "   ", long_id(MAX_SESSION_ID_CHARS + 1), "tab\there"]:
        with pytest.raises(RejectedError) as refused:
            sessions.get(bad)
        assert refused.value.code == "invalid_input", bad
    # Started by a raw client (as another SDK would): the session fails at once, by name,
    # and its ask is refused with the same name instead of failing without a reason.
    session_id = long_id(999)
    handle = await client.start_workflow(
        "AgentSession",
        SessionInput(agent_id="a", config=config()),
        id=session_id,
        task_queue=task_queue,
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    assert isinstance(failed.value.cause, ApplicationError) and failed.value.cause.type == "invalid_input"
    assert f"the limit is {MAX_SESSION_ID_CHARS} characters" in failed.value.cause.message


async def test_a_session_at_the_longest_id_asks_forks_and_its_forks_fork(
    client: Client, task_queue: str
) -> None:
    sessions = Sessions(client, task_queue=task_queue)
    session = sessions.get(long_id(MAX_SESSION_ID_CHARS))
    first = await session.ask_sync("hello", config=config(), overrides=script(turn("hi")))
    assert first.status == "completed" and first.result == "hi"
    # A chain of forks: each generation's id stays a session id (it would grow 7 characters a generation).
    parent = session
    for generation in range(3):
        forked = await parent.fork()
        assert len(forked.session_id) <= MAX_SESSION_ID_CHARS, generation
        assert forked.session_id.endswith("-fork-1")
        parent = sessions.get(forked.session_id)
        answered = await parent.ask_sync(f"ask {generation}", overrides=script(turn(f"answer {generation}")))
        assert answered.status == "completed" and answered.result == f"answer {generation}"


async def test_a_fork_with_a_blank_or_bad_id_is_refused_and_starts_nothing(
    client: Client, task_queue: str
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("hello", config=config(), overrides=script(turn("hi")))
    for bad in ["", " ", "a\x00b"]:
        with pytest.raises(RejectedError) as refused:
            await session.fork(session_id=bad)
        assert refused.value.code == "invalid_input", bad
        with pytest.raises(WorkflowUpdateFailedError) as raw:
            await client.get_workflow_handle(session.workflow_id).execute_update(  # pyright: ignore[reportUnknownMemberType]
                "fork", {"session_id": bad}
            )
        assert isinstance(raw.value.cause, ApplicationError) and raw.value.cause.type == "invalid_input"
    assert (await session.fork()).session_id == f"{session.workflow_id}-fork-1"


async def test_fifty_concurrent_default_id_forks_all_start(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("hello", config=config(), overrides=script(turn("hi")))
    forks = await asyncio.gather(*(session.fork() for _ in range(50)))  # none refused
    ids = {fork.session_id for fork in forks}
    assert len(ids) == 50
    # Each took a number of its own (an Update the server delivers again may take one more).
    numbers = {int(fork_id.removeprefix(f"{session.workflow_id}-fork-")) for fork_id in ids}
    assert len(numbers) == 50 and max(numbers) <= 60, sorted(numbers)


async def test_a_forks_runs_follow_its_own_set_system_prompt(client: Client, task_queue: str) -> None:
    sessions = Sessions(client, task_queue=task_queue)
    parent = sessions.get(new_session_id())
    await parent.ask_sync("hello", config=config(system_prompt="parent prompt"), overrides=script(turn("hi")))
    child = sessions.get((await parent.fork()).session_id)
    assert (await child.context()).system_prompt == "parent prompt"
    assert (await child.set_system_prompt("fork prompt")).status == "accepted"
    assert (await child.status()).config.system_prompt == "fork prompt"
    assert (await child.context()).system_prompt == "fork prompt"
    answered = await child.ask_sync("and now?", overrides=script(turn("ok")))
    record = await child.request(answered.request_id)
    first_call = (await llm_inputs(client.get_workflow_handle(record.run_workflow_id)))[0]
    assert first_call["system_prompt"] == "fork prompt", first_call
    # The parent keeps its own prompt.
    assert (await parent.context()).system_prompt == "parent prompt"


async def test_a_rollback_of_a_request_with_the_longest_id_applies(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("hello", config=config(), overrides=script(turn("hi")))
    held = await session.ask(
        AskInput(query="slow", request_id="r" * 200, overrides=script(turn("late", delay_s=30)))
    )
    replacement = await session.ask(
        AskInput(query="instead", on_busy="rollback", overrides=script(turn("instead answer")))
    )
    assert held.request_id == "r" * 200
    result = await session.await_result(replacement.request_id)
    assert result.status == "completed" and result.result == "instead answer"
