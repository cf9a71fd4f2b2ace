"""A2A tasks: a task is one request of a session, and the request core says where it stands.

A task id is `<contextId>:<request id>`: the context names the caller's thread (with the
principal and the agent of the route), the request id one of its kept requests. Nothing is
stored here: `task_of` shows the core's `RequestState` as a task (queued `submitted`, running
`working`, awaiting approval `input-required` with the calls as data parts, and the ends with
their artifacts), so any gateway answers for any task and another principal's task is not
found, exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types.a2a_pb2 import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from contracts.approval import PendingApproval
from contracts.errors import NOT_FOUND
from gateway.context import GatewayContext
from gateway.core import RequestState, Thread, is_request_id, open_thread
from gateway.errors import GatewayError
from gateway.identity.principal import Principal
from gateway.owners import THREAD_ID_PATTERN

__all__ = [
    "ANSWER_ARTIFACT",
    "OUTPUT_ARTIFACT",
    "TaskRef",
    "agent_message",
    "approval_data",
    "awaiting_status",
    "parse_task_id",
    "started_task",
    "task_of",
    "to_struct",
]

ANSWER_ARTIFACT = "answer"
OUTPUT_ARTIFACT = "output"
SEPARATOR = ":"
STATES = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "awaiting_approval": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
"""The task state of each of the core's request statuses."""


@dataclass(frozen=True)
class TaskRef:
    """Where a task lives: the caller's thread (its context) and the request id."""

    thread: Thread
    request_id: str

    @property
    def context_id(self) -> str:
        """The A2A context id: the thread id."""
        return self.thread.thread_id

    @property
    def task_id(self) -> str:
        """The A2A task id."""
        return f"{self.context_id}{SEPARATOR}{self.request_id}"


def _not_found() -> TaskNotFoundError:
    return TaskNotFoundError(data={"code": NOT_FOUND})


async def parse_task_id(ctx: GatewayContext, principal: Principal, agent: str, value: str) -> TaskRef:
    """The task `value` of `principal` with `agent`.

    Raises:
        TaskNotFoundError: `value` is not a task id this gateway gives out (the same answer as for
            a task that does not exist or is another principal's).
    """
    context, sep, request = value.partition(SEPARATOR)
    if not sep or not THREAD_ID_PATTERN.fullmatch(context) or not is_request_id(request):
        raise _not_found()
    return await task_ref(ctx, principal, agent, context, request)


async def task_ref(
    ctx: GatewayContext, principal: Principal, agent: str, context_id: str, request_id: str
) -> TaskRef:
    """The task of request `request_id` of the context `context_id`.

    Raises:
        TaskNotFoundError: `context_id` is not a thread id.
    """
    try:
        return TaskRef(await open_thread(ctx, principal, agent, context_id), request_id)
    except GatewayError as error:
        raise _not_found() from error


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


def awaiting_status(ref: TaskRef, pending: Sequence[PendingApproval]) -> TaskStatus:
    """`input-required`, its message the calls awaiting a decision (`pending`, at least one)."""
    parts = [new_data_part(approval_data(p)) for p in pending]
    message = agent_message(ref, f"{ref.task_id}/approval/{pending[0].call_id}", parts)
    return TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=message)


def task_of(ref: TaskRef, state: RequestState, *, history: bool = True) -> Task:
    """The task of a request as it stands: its state, status message, artifacts (once ended) and usage."""
    task = Task(id=ref.task_id, context_id=ref.context_id)
    task.metadata.CopyFrom(
        to_struct({"usage": state.usage.model_dump(mode="json"), "run_workflow_id": state.run_workflow_id})
    )
    if history:
        task.history.append(user_message(ref, state.query_preview))
    task_state = STATES[state.status]
    if state.status == "awaiting_approval":
        task.status.CopyFrom(awaiting_status(ref, state.pending))
        return task
    if state.status == "completed":
        if state.answer is not None:
            task.artifacts.append(_answer_artifact(state.answer))
        if state.output is not None:
            task.artifacts.append(_output_artifact(state.output))
    if state.error_code is not None:
        text = f"{state.error_code}: {state.error_message}"
        message = agent_message(ref, f"{ref.task_id}/end", [new_text_part(text)], code=state.error_code)
        task.status.CopyFrom(TaskStatus(state=task_state, message=message))
        return task
    task.status.CopyFrom(TaskStatus(state=task_state))
    return task


def _answer_artifact(answer: str) -> Artifact:
    return Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT, parts=[new_text_part(answer)])


def _output_artifact(output: Any) -> Artifact:
    return Artifact(artifact_id=OUTPUT_ARTIFACT, name=OUTPUT_ARTIFACT, parts=[new_data_part(output)])
