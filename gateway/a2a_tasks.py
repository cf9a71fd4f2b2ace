"""A2A tasks read from the sessions: a task is one ask of a session, and the session is its durable truth.

A task id is `<contextId>:<request id>`: the context names the caller's session (with the
principal and the agent of the route, `gateway.owners.session_id`), the request id one of its
kept requests. Nothing is stored here: `task_snapshot` reads the request's record, its run's
pending approvals and, once it has ended, its run's result, so any gateway answers for any task
and another principal's task is not found, exactly like an unknown one.

`SessionTaskStore` is the SDK's `TaskStore` over these reads (`save` and `delete` change
nothing: the sessions record every change themselves).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks.task_store import TaskStore
from a2a.types.a2a_pb2 import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict
from temporalio.service import RPCError

from clients.errors import RejectedError
from clients.session_handle import SessionHandle
from contracts.approval import PendingApproval
from contracts.run import RunResult
from contracts.session import RequestRecord
from gateway.auth import Principal
from gateway.context import GatewayContext
from gateway.errors import GatewayError
from gateway.owners import THREAD_ID_PATTERN, session_id

__all__ = [
    "ANSWER_ARTIFACT",
    "OUTPUT_ARTIFACT",
    "SessionTaskStore",
    "TaskRef",
    "approval_data",
    "parse_task_id",
    "result_artifacts",
    "result_status",
    "started_task",
    "task_id",
    "task_snapshot",
]

ANSWER_ARTIFACT = "answer"
OUTPUT_ARTIFACT = "output"
SEPARATOR = ":"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_TERMINAL = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}


@dataclass(frozen=True)
class TaskRef:
    """Where a task lives: the session (of the principal and agent) and the request id."""

    context_id: str
    request_id: str
    session_id: str

    @property
    def task_id(self) -> str:
        """The A2A task id."""
        return task_id(self.context_id, self.request_id)


def task_id(context_id: str, request_id: str) -> str:
    """The A2A task id of a session's request."""
    return f"{context_id}{SEPARATOR}{request_id}"


def is_request_id(value: str) -> bool:
    """Whether `value` can name a request inside a task id."""
    return bool(_REQUEST_ID.match(value))


def parse_task_id(principal: Principal, agent: str, value: str) -> TaskRef:
    """The task `value` of `principal` with `agent`.

    Raises:
        TaskNotFoundError: `value` is not a task id this gateway gives out (the same answer as for
            a task that does not exist or is another principal's).
    """
    context, sep, request = value.partition(SEPARATOR)
    if not sep or not THREAD_ID_PATTERN.match(context) or not is_request_id(request):
        raise TaskNotFoundError(data={"code": "not_found"})
    return TaskRef(context, request, session_id(principal, agent, context))


def session_ref(principal: Principal, agent: str, context_id: str, request_id: str) -> TaskRef:
    """The task of a request of the context `context_id` (whose id was checked)."""
    try:
        return TaskRef(context_id, request_id, session_id(principal, agent, context_id))
    except GatewayError as error:
        raise TaskNotFoundError(data={"code": "not_found"}) from error


async def find_record(session: SessionHandle, request_id: str) -> RequestRecord:
    """The request's record.

    Raises:
        TaskNotFoundError: no such session, or it keeps no such request.
    """
    try:
        return await session.request(request_id)
    except (RejectedError, RPCError) as error:
        raise TaskNotFoundError(data={"code": "not_found"}) from error


def approval_data(pending: PendingApproval) -> dict[str, Any]:
    """What an `input-required` status shows of a call awaiting approval."""
    return {
        "call_id": pending.call_id,
        "tool": pending.name,
        "arguments": pending.arguments,
        "deadline": pending.deadline.isoformat(),
        "answer_with": {"approved": "true|false", "reason": "optional", "arguments": "optional object"},
    }


def agent_message(ref: TaskRef, message_id: str, parts: list[Part], **metadata: Any) -> Message:
    """An agent message of the task (status messages, streamed text)."""
    message = Message(
        message_id=message_id,
        role=Role.ROLE_AGENT,
        context_id=ref.context_id,
        task_id=ref.task_id,
        parts=parts,
    )
    if metadata:
        message.metadata.CopyFrom(to_struct(metadata))
    return message


def to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    """A protobuf Struct of JSON values."""
    return ParseDict(dict(values), struct_pb2.Struct())


async def pending_of(ctx: GatewayContext, record: RequestRecord) -> list[PendingApproval]:
    """The calls of a running request's run that await a decision (none if it has no run yet)."""
    try:
        return await ctx.runs.get(record.run_workflow_id).pending_approvals()
    except RPCError:
        return []


def started_task(ref: TaskRef, query: str) -> Task:
    """A task whose run has just started (`working`), without reading anything."""
    task = Task(id=ref.task_id, context_id=ref.context_id)
    task.status.state = TaskState.TASK_STATE_WORKING
    task.history.append(user_message(ref, query))
    return task


def user_message(ref: TaskRef, text: str) -> Message:
    """The ask of the task, as the user's message of its history."""
    return Message(
        message_id=ref.request_id,
        role=Role.ROLE_USER,
        context_id=ref.context_id,
        task_id=ref.task_id,
        parts=[new_text_part(text)],
    )


async def task_snapshot(ctx: GatewayContext, ref: TaskRef, *, history: bool = True) -> Task:
    """The task as it stands: its state, status message, artifacts (once ended) and usage.

    Raises:
        TaskNotFoundError: no such task for this principal and agent.
    """
    session = ctx.sessions.get(ref.session_id)
    record = await find_record(session, ref.request_id)
    task = Task(id=ref.task_id, context_id=ref.context_id)
    task.metadata.CopyFrom(
        to_struct(
            {"usage": record.outcome.usage.model_dump(mode="json"), "run_workflow_id": record.run_workflow_id}
        )
    )
    if history:
        task.history.append(user_message(ref, record.query_preview))
    state = _TERMINAL.get(record.status)
    if state is not None:
        task.status.CopyFrom(await _ended_status(ctx, ref, record, state, task))
        return task
    status = await session.status()
    if status.active_request_id != ref.request_id:
        task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        return task
    pending = await pending_of(ctx, record)
    if pending:
        parts = [new_data_part(approval_data(p)) for p in pending]
        message = agent_message(ref, f"{ref.task_id}/approval/{pending[0].call_id}", parts)
        task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=message))
    else:
        task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_WORKING))
    return task


async def _ended_status(
    ctx: GatewayContext, ref: TaskRef, record: RequestRecord, state: TaskState, task: Task
) -> TaskStatus:
    """The final status of an ended request; a completed one's answer and output become artifacts."""
    if state == TaskState.TASK_STATE_COMPLETED:
        try:
            result = await ctx.runs.get(record.run_workflow_id).result()
        except (RejectedError, RPCError):
            return TaskStatus(state=state)
        task.artifacts.extend(result_artifacts(result))
        return result_status(ref, result)
    error = record.outcome.error
    if error is None:
        return TaskStatus(state=state)
    message = agent_message(
        ref, f"{ref.task_id}/end", [new_text_part(f"{error.type}: {error.message}")], code=error.type
    )
    return TaskStatus(state=state, message=message)


def result_artifacts(result: RunResult) -> list[Artifact]:
    """The answer (text) and structured output (data) of a run's result."""
    artifacts: list[Artifact] = []
    if result.answer is not None and result.outcome.status == "completed":
        artifacts.append(
            Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT, parts=[new_text_part(result.answer)])
        )
    if result.output is not None:
        artifacts.append(
            Artifact(artifact_id=OUTPUT_ARTIFACT, name=OUTPUT_ARTIFACT, parts=[new_data_part(result.output)])
        )
    return artifacts


def result_status(ref: TaskRef, result: RunResult) -> TaskStatus:
    """The final status of a run's result (a failure's message says its code)."""
    outcome = result.outcome
    state = _TERMINAL.get(outcome.status, TaskState.TASK_STATE_FAILED)
    if outcome.error is None:
        return TaskStatus(state=state)
    text = f"{outcome.error.type}: {outcome.error.message}"
    message = agent_message(ref, f"{ref.task_id}/end", [new_text_part(text)], code=outcome.error.type)
    return TaskStatus(state=state, message=message)


class SessionTaskStore(TaskStore):
    """The SDK's task store over the sessions of one principal's calls to one agent.

    The principal is the call context's `state["principal"]`; the agent is fixed per route.
    """

    def __init__(self, ctx: GatewayContext, agent: str) -> None:
        """Read the tasks of `agent`'s sessions."""
        self._ctx = ctx
        self._agent = agent

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Nothing to do: the session recorded the change when it happened."""

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task, or None when this principal has no such task."""
        principal: Principal = context.state["principal"]
        try:
            return await task_snapshot(self._ctx, parse_task_id(principal, self._agent, task_id))
        except TaskNotFoundError:
            return None

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """No listing: a task is found by its id (the context's session keeps the last 100 requests)."""
        return ListTasksResponse()

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Nothing to do: a session keeps its requests' records (the last 100)."""
