"""Erasing a session from Temporal: the session workflow and every workflow it started, except its forks.

`SessionHandle.delete()` finds what to delete (`SessionHandle.erasable`: `workflows_of`) and
deletes it (`delete_workflows`). What is deleted:

- every run of the session (`ReActRun`): the ones its request records name, and every other
  child the visibility store lists with the session as its parent (webhook deliveries too);
  each run's own children (an agent's sub-agent runs `<run>/agent-<n>`), recursively;
- the session workflow itself, every execution of it (a continued-as-new chain is one id with
  many executions);
- never a fork: a fork is a session (`AgentSession`) started as an abandoned child, it outlives
  its parent (docs/erasing-data.md), and neither it nor anything it started is touched.

A workflow that runs is terminated first (the session first: its runs are its children), then
each execution is deleted with the workflow service's `DeleteWorkflowExecution`. Temporal deletes
asynchronously: a describe may still find a workflow for a moment, and the visibility store
lists it a little longer (the gateway's erase answers once neither does: `gateway.core.erase`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from contracts.run import WORKFLOW_TYPE as RUN_WORKFLOW_TYPE
from contracts.session import SESSION_WORKFLOW_TYPE

__all__ = [
    "ErasedSession",
    "delete_workflows",
    "queryable_id",
    "terminate_all",
    "workflows_of",
]

MAX_CHILDREN = 10_000
"""The most children of one workflow the visibility store is asked for (a bound, never reached)."""
MAX_DEPTH = 4
"""How deep the children of runs are followed (a run's agents, their agents, ...)."""
_GONE = (RPCStatusCode.NOT_FOUND,)


@dataclass
class ErasedSession:
    """What `delete_workflows` deleted: workflow ids, by kind (each with every execution it had)."""

    session_id: str
    runs: list[str] = field(default_factory=list[str])
    """The run workflows (`ReActRun`) deleted, the session's and their own agents'."""
    others: list[str] = field(default_factory=list[str])
    """Other workflows the session or its runs started (webhook deliveries)."""
    executions: int = 0
    """Workflow executions deleted in all (a continued-as-new workflow has several)."""
    files: int = 0
    """Records of files the typed client attached to the session (`SessionHandle.delete`)."""

    @property
    def workflows(self) -> int:
        """Workflow ids deleted: the session, its runs and the others."""
        return 1 + len(self.runs) + len(self.others)


def queryable_id(workflow_id: str) -> bool:
    """Whether a workflow id can be quoted in a visibility query (no quote or backslash in it)."""
    return not any(char in workflow_id for char in "'\"\\")


async def delete_workflows(client: Client, session_id: str, found: dict[str, str]) -> ErasedSession:
    """Delete the session and `found` (`workflows_of`: what it started, by type), once `terminate_all` ran.

    Raises:
        RPCError: Temporal refused or did not answer.
    """
    erased = ErasedSession(session_id)
    for workflow_id, workflow_type in found.items():
        (erased.runs if workflow_type == RUN_WORKFLOW_TYPE else erased.others).append(workflow_id)
    for workflow_id in [*found, session_id]:
        erased.executions += await _delete_all(client, workflow_id)
    return erased


async def terminate_all(client: Client, session_id: str, found: dict[str, str]) -> None:
    """Terminate the session, then each of `found` that still runs (its runs are its children).

    Raises:
        RPCError: Temporal did not answer.
    """
    for workflow_id in [session_id, *found]:
        await _terminate(client, workflow_id)


async def workflows_of(client: Client, session_id: str, run_ids: list[str]) -> dict[str, str]:
    """{workflow id: type} of what the session started (not forks), and their children, recursively."""
    found: dict[str, str] = dict.fromkeys(run_ids, RUN_WORKFLOW_TYPE)
    parents = [session_id, *run_ids]
    for _ in range(MAX_DEPTH + 1):
        children: list[str] = []
        for parent in parents:
            for child, child_type in (await _children(client, parent)).items():
                if child_type == SESSION_WORKFLOW_TYPE:
                    continue  # a fork: it outlives its parent
                if child not in found:
                    children.append(child)
                found[child] = child_type
        parents = children
        if not parents:
            break
    return found


async def _children(client: Client, parent: str) -> dict[str, str]:
    if not queryable_id(parent):
        return {}
    query = f"ParentWorkflowId = '{parent}'"
    listed: dict[str, str] = {}
    async for execution in client.list_workflows(query, limit=MAX_CHILDREN):
        listed[execution.id] = execution.workflow_type
    return listed


async def _terminate(client: Client, workflow_id: str) -> None:
    handle = client.get_workflow_handle(workflow_id)
    try:
        described = await handle.describe()
    except RPCError as error:
        if error.status in _GONE:
            return
        raise
    if described.status == WorkflowExecutionStatus.RUNNING:
        with contextlib.suppress(RPCError):  # it ended meanwhile: nothing to terminate
            await handle.terminate(reason="erased")


async def _delete_all(client: Client, workflow_id: str) -> int:
    """Delete every execution of `workflow_id` (the latest, and the ones it continued as new from)."""
    run_ids: list[str] = []
    with contextlib.suppress(RPCError):
        run_ids.append((await client.get_workflow_handle(workflow_id).describe()).run_id)
    if queryable_id(workflow_id):
        async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'", limit=MAX_CHILDREN):
            if execution.run_id not in run_ids:
                run_ids.append(execution.run_id)
    deleted = 0
    for run_id in run_ids:
        if await _delete(client, workflow_id, run_id):
            deleted += 1
    return deleted


async def _delete(client: Client, workflow_id: str, run_id: str) -> bool:
    request = DeleteWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
    )
    try:
        await client.workflow_service.delete_workflow_execution(request)
    except RPCError as error:
        if error.status in _GONE:
            return False
        raise
    return True
