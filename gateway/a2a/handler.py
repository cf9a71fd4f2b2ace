"""The A2A request handler of one agent: the SDK's `RequestHandler` over the typed client.

A context is a thread of the caller's, a task is one request (`gateway.a2a.tasks`); every
operation is the request core's (`gateway.core.RequestCore`). A message without a task id asks
(the message id is the request id, so a resent message is answered, not run twice; the busy
policy comes from the metadata). A message to an existing task decides its pending approval (a
data part `{"approved": ...}`) or steers it (text): both go to the session, as everywhere.
`tasks/cancel` cancels the task's run. Nothing is kept here: the sessions are the task store,
and any gateway serves any task.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import (
    RequestHandler,
    validate_request_params,  # pyright: ignore[reportUnknownVariableType]
)
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
)
from google.protobuf.json_format import MessageToDict

from contracts.errors import NOT_RUNNING
from contracts.session import AskAccepted
from gateway.a2a.messages import Incoming, a2a_errors, parse_message
from gateway.a2a.stream import task_events
from gateway.a2a.tasks import TaskRef, parse_task_id, started_task, task_of, task_ref
from gateway.context import GatewayContext
from gateway.core import RequestCore, check_request_id, is_request_id, parse_mode, parse_on_busy
from gateway.core.attachments import take_attachments
from gateway.errors import GatewayError
from gateway.identity.principal import Principal

__all__ = ["DurableRequestHandler"]

STARTED = frozenset({"started", "interrupted", "rolled_back"})
"""Dispositions of an ask whose run starts now."""


class DurableRequestHandler(RequestHandler):
    """A2A for one of the gateway's agents (the principal is the call context's `state["principal"]`)."""

    def __init__(self, ctx: GatewayContext, agent: str) -> None:
        """Serve `agent` (one of `ctx.settings.agents`)."""
        self._ctx = ctx
        self._core = RequestCore(ctx)
        self._agent = agent

    def _principal(self, context: ServerCallContext) -> Principal:
        return context.state["principal"]

    # ---- messages ------------------------------------------------------------------------------

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """Ask (or continue a task) and wait until the task ends or awaits input (or at once, if asked)."""
        task: Task | None = None
        stream = self._events(params, context)
        try:
            async for event in stream:
                task = _fold(task, event)
                if params.configuration.return_immediately:
                    break
        finally:
            await stream.aclose()
        assert task is not None  # the first event is always the task
        return task

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Ask (or continue a task) and stream the task's events until it ends or awaits input."""
        async for event in self._events(params, context):
            yield event

    async def _events(self, params: SendMessageRequest, context: ServerCallContext) -> AsyncGenerator[Event]:
        principal = self._principal(context)
        with a2a_errors():
            incoming = parse_message(params.message, MessageToDict(params.metadata))
            first: Task | None = None
            run_id: str | None = None
            if params.message.task_id:
                ref = await parse_task_id(self._ctx, principal, self._agent, params.message.task_id)
                await self._continue(principal, ref, incoming)
            else:
                ref, accepted = await self._ask(principal, params.message, incoming)
                if accepted.disposition in STARTED:  # no need to read what was just started
                    first, run_id = started_task(ref, incoming.text), accepted.run_workflow_id
            async for event in task_events(self._ctx, self._core, ref, first=first, run_id=run_id):
                yield event  # an end is sent once recorded (`RequestWaits.follow`): `tasks/get` agrees

    async def _ask(
        self, principal: Principal, message: Message, incoming: Incoming
    ) -> tuple[TaskRef, AskAccepted]:
        context_id = message.context_id or uuid.uuid4().hex
        request_id = message.message_id if is_request_id(message.message_id) else uuid.uuid4().hex
        ref = await task_ref(self._ctx, principal, self._agent, context_id, request_id)
        expected = incoming.option("expected_last_request")
        attachments = await take_attachments(self._ctx, ref.thread, incoming.files, request_id=request_id)
        accepted = await self._core.asks.ask(
            ref.thread,
            incoming.text,
            request_id=request_id,
            on_busy=parse_on_busy(incoming.option("on_busy")),
            mode=parse_mode(incoming.option("mode")),
            expected_last_request=None
            if expected is None
            else check_request_id(expected, "expected_last_request"),
            source=f"a2a:{principal.name}",
            attachments=attachments,
        )
        return TaskRef(ref.thread, accepted.request_id), accepted

    async def _continue(self, principal: Principal, ref: TaskRef, incoming: Incoming) -> None:
        """Decide the task's pending approval, or steer it with the text."""
        if incoming.files:
            raise GatewayError.invalid_input(
                "files cannot be sent into a running task: send them in a new message (no taskId)"
            )
        decision = incoming.decision
        if decision is None:
            mode = parse_mode(incoming.option("mode"))
            await self._core.controls.steer(
                ref.thread, ref.request_id, incoming.text, mode=mode, source=f"a2a:{principal.name}"
            )
            return
        if decision.reason is None and incoming.text:
            decision = decision.model_copy(update={"reason": incoming.text})
        await self._core.controls.approve(ref.thread, ref.request_id, decision, approver=principal.name)

    # ---- tasks ---------------------------------------------------------------------------------

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """The task as its session records it (not found: the same for another principal's)."""
        with a2a_errors():
            ref = await parse_task_id(self._ctx, self._principal(context), self._agent, params.id)
            return task_of(ref, await self._core.reads.state(ref.thread, ref.request_id))

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Cancel the task's run; the task ends `canceled` (an ended task is not cancelable)."""
        principal = self._principal(context)
        with a2a_errors():
            ref = await parse_task_id(self._ctx, principal, self._agent, params.id)
            try:
                state = await self._core.controls.cancel(
                    ref.thread, ref.request_id, reason=f"cancelled through A2A by {principal.name}"
                )
            except GatewayError as refused:
                if refused.code != NOT_RUNNING:
                    raise
                raise TaskNotCancelableError(message=refused.message, data={"code": refused.code}) from None
            return task_of(ref, state)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task, then its events from its run's start (every status update) until it stops."""
        with a2a_errors():
            ref = await parse_task_id(self._ctx, self._principal(context), self._agent, params.id)
            async for event in task_events(self._ctx, self._core, ref):
                yield event

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks of one context (`contextId` is required: a task is found through its session)."""
        if not params.context_id:
            return ListTasksResponse()
        principal = self._principal(context)
        with a2a_errors():
            try:
                thread = (await task_ref(self._ctx, principal, self._agent, params.context_id, "x")).thread
                records = await self._core.reads.records(thread)
            except GatewayError:
                return ListTasksResponse()
            tasks: list[Task] = []
            for record in records[-(params.page_size or 50) :]:
                ref = TaskRef(thread, record.request_id)
                tasks.append(
                    task_of(ref, await self._core.reads.state(thread, record.request_id), history=False)
                )
            return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    # ---- not offered -----------------------------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered: stream or poll `tasks/get`."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """There is no extended card: the public card says everything."""
        raise ExtendedAgentCardNotConfiguredError


def _fold(task: Task | None, event: Event) -> Task:
    """The task after `event` (what a blocking `message/send` returns)."""
    if isinstance(event, Task):
        return event
    assert task is not None
    if isinstance(event, TaskStatusUpdateEvent):
        task.status.CopyFrom(event.status)
        usage: Any = MessageToDict(event.metadata).get("usage")
        if usage is not None:
            task.metadata.update({"usage": usage})
    elif isinstance(event, TaskArtifactUpdateEvent):
        task.artifacts.append(event.artifact)
    return task
