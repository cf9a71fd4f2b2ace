"""Update-with-start, written once: start a workflow if it does not run yet and send it an Update.

Three askers send one: a client's ask (`clients.session_ask`, through `SessionHandle.ask`), a
schedule's firing (`activities.background.ask_for_schedule`, with the worker's client) and the
admission of either (`activities.background.run_admission.admit_request`, the `admit` Update of a
principal's `RunAdmission`). Each keeps its own answer to a refusal; what they share is here:
the start operation, `USE_EXISTING` (a workflow that runs already is sent the Update, never
started twice), and the call.

Why a room of its own: `clients` and `activities` may not import each other, and the rooms below
both (`contracts`, `conversation`, `payloads`, ...) hold wire types and the payload path, no
calls to a server. This room sits just above `contracts` (it imports only that) and below both,
so a newcomer finds the one update-with-start by its name. Workflows never import it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from contracts import TASK_QUEUE
from contracts.session import SESSION_WORKFLOW_TYPE, AskAccepted, AskInput, SessionInput

__all__ = ["ask_with_start", "update_with_start"]

R = TypeVar("R")


async def update_with_start(
    client: Client,
    workflow: str,
    start_input: Any,
    update: str,
    update_input: Any,
    *,
    workflow_id: str,
    task_queue: str,
    result_type: type[R],
    summary: str | None = None,
    details: str | None = None,
    wait: timedelta | None = None,
) -> R:
    """Update `update` of the workflow `workflow_id` with `update_input`; first started, if it does not run.

    The workflow is started as `workflow` with `start_input` on `task_queue`, its static summary
    and details in the Web UI `summary` and `details`; one that runs already (`USE_EXISTING`)
    is sent the Update only. `wait` bounds each call to the server (None: no bound).

    Raises:
        WorkflowUpdateFailedError: the workflow refused the Update (its cause says why).
        RPCError: Temporal did not answer.
    """
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        workflow,
        start_input,
        id=workflow_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=summary,
        static_details=details,
    )
    result: R = await client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
        update, update_input, start_workflow_operation=start, result_type=result_type, rpc_timeout=wait
    )
    return result


async def ask_with_start(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    session: SessionInput,
    *,
    task_queue: str = TASK_QUEUE,
    summary: str | None = None,
    details: str | None = None,
    wait: timedelta | None = None,
) -> AskAccepted:
    """The `ask` Update, starting the session with `session` if it does not run yet.

    `wait` bounds each call to the server (None: no bound); `summary` and `details` are the
    new session's static summary and details in the Web UI.

    Raises:
        WorkflowUpdateFailedError: the ask was rejected (`busy`, `invalid_input`, ...).
    """
    return await update_with_start(
        client,
        SESSION_WORKFLOW_TYPE,
        session,
        "ask",
        ask_input,
        workflow_id=session_id,
        task_queue=task_queue,
        result_type=AskAccepted,
        summary=summary,
        details=details,
        wait=wait,
    )
