"""The typed client takes payloads built before (as the CLI builds them, once) and checks them again.

Against a real dev server and worker: a built ask creates and answers a session, a built
steer and a built fork reach it, and a built payload changed after it was built is refused
with the code the keyword API gives, nothing sent.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client

from client import AgentConfig, RejectedError, Sessions
from clients import inputs, session_ask, session_inputs
from contracts.limits import MAX_QUERY_CHARS
from tests.helpers import turn
from tests.session_helpers import new_session_id


async def test_a_built_ask_steer_and_fork_reach_the_session(client: Client, task_queue: str) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    agent = AgentConfig.model_validate({"model": "scripted", "script": [turn("first"), turn("second")]})
    ask = session_ask.ask_input("Hello?", request_id="built-1", overrides={"max_iterations": 3})
    answer = await session.ask_sync(ask, config=agent)
    assert (answer.request_id, answer.status, answer.result) == ("built-1", "completed", "first")
    steered = await session.steer(inputs.steer_input("Between turns.", source="built"))
    assert (steered.status, steered.reason) == ("rejected", "idle")
    forked = await session.fork(session_inputs.fork_input(1, f"{session.workflow_id}-built"))
    assert forked.session_id == f"{session.workflow_id}-built" and forked.forked_from.seq == 1


async def test_a_built_payload_is_checked_again_and_its_options_are_not_given_twice(
    client: Client, task_queue: str
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    ask = session_ask.ask_input("Fine.")
    with pytest.raises(TypeError, match="already carries on_busy"):
        await session.ask(ask, on_busy="enqueue")
    oversized = ask.model_copy(update={"query": "q" * (MAX_QUERY_CHARS + 1)})  # no validation on copy
    with pytest.raises(RejectedError) as refused:
        await session.ask(oversized)
    assert refused.value.code == "payload_too_large"
    blank = inputs.steer_input("Fine.").model_copy(update={"content": "  "})
    ack = await session.steer(blank)
    assert (ack.status, ack.reason) == ("rejected", "blank_content")
    approve = inputs.approve_input("call-1").model_copy(update={"call_id": " "})
    assert (await session.approve(approve)).reason == "invalid_input"
