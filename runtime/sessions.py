"""Talking to an `AgentSession` from any (stateless) process: all it needs is the session id.

The first `ask` creates the session (update-with-start), later ones reach the running
session; a chat backend never has to find a run's id or carry the thread between calls.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy

from contracts import TASK_QUEUE, AgentConfig
from contracts.session import (
    SESSION_WORKFLOW_TYPE,
    AskAccepted,
    AskInput,
    RequestRef,
    RequestResult,
    SessionInput,
)


def session_workflow_id(conversation_id: str) -> str:
    """The workflow id of the session of a conversation: `agent-<conversation id>`."""
    return f"agent-{conversation_id}"


async def ask(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    *,
    agent_id: str,
    config: AgentConfig,
    snapshot: str | None = None,
    task_queue: str = TASK_QUEUE,
) -> AskAccepted:
    """Ask the session `session_id`, starting it with `config` (and `snapshot`) if it does not exist yet.

    Raises:
        WorkflowUpdateFailedError: the ask was rejected (`busy`, `invalid_input`, ...).
    """
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        SESSION_WORKFLOW_TYPE,
        SessionInput(agent_id=agent_id, config=config, snapshot=snapshot),
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    accepted: AskAccepted = await client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
        "ask", ask_input, start_workflow_operation=start, result_type=AskAccepted
    )
    return accepted


async def update(
    handle: WorkflowHandle[Any, Any], name: str, payload: BaseModel, result_type: type[Any]
) -> Any:
    """Send an Update by name (typed wrapper over the SDK's overloads)."""
    return await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
        name, payload, result_type=result_type
    )


async def await_result(client: Client, session_id: str, request_id: str) -> RequestResult:
    """Wait for a request's terminal record (works for any of the last 100 requests)."""
    record: RequestResult = await update(
        client.get_workflow_handle(session_id),
        "await_result",
        RequestRef(request_id=request_id),
        RequestResult,
    )
    return record


async def ask_sync(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    *,
    agent_id: str,
    config: AgentConfig,
    task_queue: str = TASK_QUEUE,
) -> RequestResult:
    """`ask`, then wait for the result."""
    accepted = await ask(
        client, session_id, ask_input, agent_id=agent_id, config=config, task_queue=task_queue
    )
    return await await_result(client, session_id, accepted.request_id)
