"""An ask that creates a session from start input it cannot use: refused by name, no run promised."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from clients import sessions
from contracts.session import AskInput, ExportInput, ExportResult
from tests.helpers import turn
from tests.run.test_robustness_inputs import fails_once, raw, rejected
from tests.session_helpers import ask, config, new_session_id


async def test_an_ask_that_creates_a_session_from_a_bad_snapshot_gets_the_named_error(
    client: Client, task_queue: str
) -> None:
    source = new_session_id()
    accepted = await ask(client, task_queue, source, "remember 42", turn("noted"))
    await sessions.await_result(client, source, accepted.request_id)
    exported = await sessions.update(
        client.get_workflow_handle(source), "export", ExportInput(), ExportResult
    )
    token: str = exported.token
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    for snapshot, code in [("not-a-token", "snapshot_prefix"), (tampered, "snapshot_signature")]:
        session_id = new_session_id()
        creating_ask = sessions.ask(
            client,
            session_id,
            AskInput(query="hello"),
            agent_id="test",
            config=config(),
            snapshot=snapshot,
            task_queue=task_queue,
        )
        await rejected(creating_ask, code)
        await fails_once(client.get_workflow_handle(session_id), code)


BAD_SESSION_STARTS: list[tuple[str, list[Any]]] = [
    ("empty object", [{}]),
    ("null", [None]),
    ("no arguments", []),
    ("null model", [{"agent_id": "test", "config": {"model": None}}]),
]
"""Session start input that does not decode, as a plain client can send it with update-with-start."""


@pytest.mark.parametrize("update_name", ["ask", "ask_sync"])
@pytest.mark.parametrize(("label", "start_args"), BAD_SESSION_STARTS, ids=[b[0] for b in BAD_SESSION_STARTS])
async def test_an_ask_that_creates_a_session_from_a_bad_start_is_refused_by_name(
    client: Client, task_queue: str, update_name: str, label: str, start_args: list[Any]
) -> None:
    session_id = new_session_id()
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "AgentSession",
        args=start_args,
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    creating_ask = raw(client).execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
        update_name, {"query": "hello"}, start_workflow_operation=start
    )
    await rejected(creating_ask, "invalid_input", "AgentSession input")
    session = raw(client).get_workflow_handle(session_id)
    await fails_once(session, "invalid_input", "AgentSession input")
    # No run was promised, and none exists.
    with pytest.raises(RPCError) as missing:
        await raw(client).get_workflow_handle(f"{session_id}-run-1").describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND, label
    history = await session.fetch_history()
    started = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    accepted = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert started == [] and accepted == [], label
