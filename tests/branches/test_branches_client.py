"""Edit and regenerate on fork with the typed client, against a real dev server and worker (docs/branches.md).

A regenerate forks right before the request's message and asks it again there; an edit forks
right before a user message (named by its seq or its request's id) and asks the new text; the
family's root records each branch (the newest is its head), and the original keeps its thread.
Bad input is refused by name with nothing forked and nothing asked.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from clients.sessions import Sessions
from contracts.session import AskInput
from conversation import Message, MessageEntry
from payloads.blob_store import BlobStore
from tests.cli.test_cli_follow import cli
from tests.helpers import turn, workflow_exists
from tests.session_helpers import config, new_session_id, script
from tests.stored_attachments import PNG, stored

ANSWER = "the answer"


def pairs(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


async def conversation(client: Client, task_queue: str) -> SessionHandle:
    """A session with two turns: #0 first question, #1 its answer, #2 second question, #3 its answer."""
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = config(script=[turn(ANSWER).model_dump(mode="json")])
    for question in ("first question", "second question"):
        assert (await session.ask_sync(question, config=agent)).status == "completed"
    assert (await session.status()).thread_length == 4
    return session


async def test_a_regenerate_asks_the_last_message_again_on_a_branch_the_root_records(
    client: Client, task_queue: str
) -> None:
    session = await conversation(client, task_queue)
    before = pairs((await session.context()).messages)
    last = (await session.requests())[-1]
    made = await session.regenerate()
    branch = made.branch
    assert (branch.kind, branch.parent_id, branch.seq, branch.message_seq) == (
        "regenerate",
        session.workflow_id,
        1,
        2,
    )
    assert branch.request_id == branch.asked_request_id == made.accepted.request_id == last.request_id
    assert branch.text == "second question" and branch.session_id == f"{session.workflow_id}-fork-1"
    forked = session.sibling(branch.session_id)
    assert (await forked.await_result(made.accepted.request_id)).result == ANSWER
    assert pairs((await forked.context()).messages) == [
        ("user", "first question"),
        ("assistant", ANSWER),
        ("user", "second question"),
        ("assistant", ANSWER),
    ]
    # The original is as it was; the root records the branch, and names it its head.
    assert pairs((await session.context()).messages) == before
    assert (await session.status()).thread_length == 4
    assert (await session.status()).head == branch.session_id
    status = await forked.status()
    assert status.forked_from is not None and status.forked_from.branch_of == session.workflow_id
    assert (await session.branches()).branches == [branch] == (await forked.branches()).branches
    assert (await forked.branches()).root_id == session.workflow_id


async def test_a_regenerate_and_an_edit_keep_the_message_s_files(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    image = await stored(store, PNG, "dot.png", "image/png")
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = config(script=[turn(ANSWER).model_dump(mode="json")])
    asked = await session.ask_sync(AskInput(query="what is this?", attachments=[image]), config=agent)
    assert asked.status == "completed"
    regenerated = await session.regenerate()
    edited = await session.edit(asked.request_id, "and this?")
    for made in (regenerated, edited):
        branch = session.sibling(made.branch.session_id)
        assert (await branch.await_result(made.accepted.request_id)).result == ANSWER
        [user] = [m for m in (await branch.context()).messages if m.role == "user"]
        assert user.attachments == [image], made.branch.kind


async def test_an_edit_forks_before_the_message_and_asks_the_new_text(
    client: Client, task_queue: str
) -> None:
    session = await conversation(client, task_queue)
    first = (await session.requests())[0]
    # The first message (seq 0): the branch starts empty, before the thread's first entry.
    at_start = await session.edit(0, "edited first", request_id="edit-1")
    assert (at_start.branch.seq, at_start.branch.message_seq, at_start.branch.kind) == (-1, 0, "edit")
    assert at_start.branch.request_id == first.request_id and at_start.accepted.request_id == "edit-1"
    start_branch = session.sibling(at_start.branch.session_id)
    assert (await start_branch.await_result("edit-1")).result == ANSWER
    assert pairs((await start_branch.context()).messages) == [("user", "edited first"), ("assistant", ANSWER)]

    # Named by its request's id, on the branch (the head): recorded at the root, the new head.
    second = await start_branch.edit("edit-1", "edited again")
    assert second.branch.parent_id == start_branch.workflow_id
    again = session.sibling(second.branch.session_id)
    await again.await_result(second.accepted.request_id)
    assert pairs((await again.context()).messages) == [("user", "edited again"), ("assistant", ANSWER)]
    family = await session.branches()
    assert [b.session_id for b in family.branches] == [at_start.branch.session_id, second.branch.session_id]
    assert (await session.status()).head == second.branch.session_id
    # Every thread keeps its own messages.
    assert pairs((await session.context()).messages)[0] == ("user", "first question")
    assert pairs((await start_branch.context()).messages)[0] == ("user", "edited first")


async def test_bad_edits_and_regenerates_are_refused_by_name_with_nothing_forked(
    client: Client, task_queue: str
) -> None:
    session = await conversation(client, task_queue)
    refusals: list[tuple[object, str]] = []
    for attempt in (
        session.edit(99, "x"),
        session.edit(1, "x"),  # the assistant's answer: not a user message
        session.edit("no-such-request", "x"),
        session.edit(0, "   "),
        session.edit(0, "x" * 100_001),
        session.regenerate("no-such-request"),
    ):
        with pytest.raises(RejectedError) as refused:
            await attempt
        refusals.append((refused.value.code, refused.value.message))
    codes = [code for code, _ in refusals]
    assert codes == [
        "unknown_message",
        "unknown_message",
        "unknown_message",
        "invalid_input",
        "payload_too_large",
        "unknown_message",
    ], refusals
    assert "seq 99" in refusals[0][1] and "no-such-request" in refusals[2][1]

    running = await session.ask("take long", overrides=script(turn("late", delay_s=60)))
    with pytest.raises(RejectedError) as busy:
        await session.regenerate()
    assert busy.value.code == "busy"
    assert (await session.cancel("done")).status == "accepted"

    # A fork with no request of its own has nothing to regenerate.
    plain = session.sibling((await session.fork(seq=1)).session_id)
    with pytest.raises(RejectedError) as nothing:
        await plain.regenerate()
    assert nothing.value.code == "nothing_to_regenerate"
    # Only a family's root records its branches.
    made = await session.edit(2, "other second")
    forked = session.sibling(made.branch.session_id)
    with pytest.raises(RejectedError) as not_root:
        await forked.record_branch(made.branch)
    assert not_root.value.code == "invalid_input" and "branch of" in not_root.value.message

    assert [b.session_id for b in (await session.branches()).branches] == [made.branch.session_id]
    assert not await workflow_exists(client, f"{session.workflow_id}-fork-3")
    user_messages = [
        e async for e in session.thread() if isinstance(e, MessageEntry) and e.payload.role == "user"
    ]
    assert [e.payload.content for e in user_messages][:3] == [
        "first question",
        "second question",
        "take long",
    ]
    assert running.request_id


async def test_the_cli_regenerates_edits_and_lists_branches(client: Client, task_queue: str) -> None:
    session = await conversation(client, task_queue)
    sid = session.workflow_id
    again = await cli(client, "regenerate", sid, "--id", f"{sid}-again")  # counts as fork 1
    assert again.code == 0, again.err
    assert again.out.splitlines() == [f"branched {sid} at seq 1: {sid}-again", ANSWER]
    edited = await cli(client, "edit", sid, "0", "edited first")
    assert edited.code == 0 and f"branched {sid} at seq -1: {sid}-fork-2" in edited.out, edited.err
    listed = await cli(client, "branches", f"{sid}-again")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines() == [
        f"{sid} (root)",
        f"{sid}-again: regenerate of {sid} at seq 2: second question",
        f"{sid}-fork-2: edit of {sid} at seq 0: edited first",
    ]
    unknown = await cli(client, "edit", sid, "99", "x")
    assert unknown.code == 1 and "unknown_message" in unknown.out + unknown.err
    assert len((await session.branches()).branches) == 2
