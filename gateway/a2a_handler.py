"""The A2A request handler of one agent: the SDK's `RequestHandler` over the typed client.

A context is a session of the caller's (`gateway.owners.session_id(principal, agent, contextId)`),
a task is one ask (`gateway.a2a_tasks`). A message without a task id asks the session (the
message id is the request id, so a resent message is answered, not run twice; the busy policy
comes from the metadata). A message to an existing task decides its pending approval (a data
part `{"approved": ...}`) or steers its run (text). `tasks/cancel` cancels the task's run.
Nothing is kept here: the sessions are the task store, and any gateway serves any task.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
)
from google.protobuf.json_format import MessageToDict
from temporalio.service import RPCError

from clients.errors import RejectedError
from contracts.errors import NOT_RUNNING, UNKNOWN_CALL
from contracts.session import AskAccepted
from gateway.a2a_messages import Incoming, a2a_errors, parse_message, refusal
from gateway.a2a_stream import STOPPING_STATES, task_events
from gateway.a2a_tasks import (
    TaskRef,
    find_record,
    is_request_id,
    parse_task_id,
    pending_of,
    session_ref,
    started_task,
    task_snapshot,
)
from gateway.auth import Principal
from gateway.context import GatewayContext, agent_config
from gateway.identity.scopes import APPROVE, require

__all__ = ["DurableRequestHandler"]

STARTED = frozenset({"started", "interrupted", "rolled_back"})
"""Dispositions of an ask whose run starts now."""
SETTLE_S = 5.0
"""How long a finished task waits for its session's record to say so (the run ends first)."""


class DurableRequestHandler(RequestHandler):
    """A2A for one of the gateway's agents (the principal is the call context's `state["principal"]`)."""

    def __init__(self, ctx: GatewayContext, agent: str) -> None:
        """Serve `agent` (one of `ctx.settings.agents`)."""
        self._ctx = ctx
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
                ref = parse_task_id(principal, self._agent, params.message.task_id)
                await self._continue(principal, ref, incoming)
            else:
                ref, accepted = await self._ask(principal, params.message, incoming)
                if accepted.disposition in STARTED:  # no need to read what was just started
                    first, run_id = started_task(ref, incoming.text), accepted.run_workflow_id
            async for event in task_events(self._ctx, ref, first=first, run_id=run_id):
                yield event
                if _stops(event):
                    await self._settle(ref)

    async def _ask(
        self, principal: Principal, message: Message, incoming: Incoming
    ) -> tuple[TaskRef, AskAccepted]:
        context_id = message.context_id or uuid.uuid4().hex
        request_id = message.message_id if is_request_id(message.message_id) else uuid.uuid4().hex
        ref = session_ref(principal, self._agent, context_id, request_id)
        on_busy = incoming.option("on_busy") or "reject"
        accepted = await self._ctx.sessions.get(ref.session_id).ask(
            incoming.text,
            config=agent_config(self._ctx, self._agent),
            agent_id=self._agent,
            request_id=request_id,
            on_busy=on_busy,  # pyright: ignore[reportArgumentType] - checked by the ask's validation
            expected_last_request=incoming.option("expected_last_request"),
        )
        return session_ref(principal, self._agent, context_id, accepted.request_id), accepted

    async def _continue(self, principal: Principal, ref: TaskRef, incoming: Incoming) -> None:
        """Decide the task's pending approval, or steer its run with the text."""
        record = await find_record(self._ctx.sessions.get(ref.session_id), ref.request_id)
        if record.status != "running":
            raise refusal(NOT_RUNNING, f"task {ref.task_id} has ended ({record.status}); send a new message")
        run = self._ctx.runs.get(record.run_workflow_id)
        decision = incoming.decision
        if decision is None:
            ack = await run.steer(
                incoming.text,
                source=f"a2a:{principal.name}",
                mode=incoming.option("mode") or "queue",  # pyright: ignore[reportArgumentType]
            )
        else:
            require(principal, APPROVE)
            pending = await pending_of(self._ctx, record)
            call_id = decision.call_id or (pending[0].call_id if pending else None)
            if call_id is None:
                raise refusal(UNKNOWN_CALL, f"task {ref.task_id} has no call awaiting approval")
            ack = await run.approve(
                call_id,
                approved=decision.approved,
                reason=decision.reason or (incoming.text or None),
                arguments=decision.arguments,
                approver=principal.name,
            )
        if ack.status == "rejected":
            raise refusal(ack.reason or NOT_RUNNING, ack.message or f"refused: {ack.reason}")

    async def _settle(self, ref: TaskRef) -> None:
        """Wait (briefly) until the session's record of an ended task says so, so `tasks/get` agrees."""
        session = self._ctx.sessions.get(ref.session_id)
        with contextlib.suppress(TimeoutError, A2AError, RPCError):
            async with asyncio.timeout(SETTLE_S):
                while (await find_record(session, ref.request_id)).status == "running":
                    status = await session.status()
                    if status.active_request_id == ref.request_id and (
                        await pending_of(self._ctx, await find_record(session, ref.request_id))
                    ):
                        return  # awaiting input, not ended
                    await asyncio.sleep(0.05)

    # ---- tasks ---------------------------------------------------------------------------------

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """The task as its session records it (not found: the same for another principal's)."""
        with a2a_errors():
            return await task_snapshot(
                self._ctx, parse_task_id(self._principal(context), self._agent, params.id)
            )

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Cancel the task's run; the task ends `canceled` (an ended task is not cancelable)."""
        principal = self._principal(context)
        with a2a_errors():
            ref = parse_task_id(principal, self._agent, params.id)
            record = await find_record(self._ctx.sessions.get(ref.session_id), ref.request_id)
            if record.status != "running":
                raise TaskNotCancelableError(data={"code": NOT_RUNNING})
            run = self._ctx.runs.get(record.run_workflow_id)
            ack = await run.cancel(reason=f"cancelled through A2A by {principal.name}")
            if ack.status == "rejected":
                raise TaskNotCancelableError(
                    message=ack.message or "not cancelable", data={"code": ack.reason}
                )
            with contextlib.suppress(RejectedError, RPCError):
                await run.result()
            await self._settle(ref)
            return await task_snapshot(self._ctx, ref)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task, then its events from its run's start (every status update) until it stops."""
        with a2a_errors():
            ref = parse_task_id(self._principal(context), self._agent, params.id)
            async for event in task_events(self._ctx, ref):
                yield event

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks of one context (`contextId` is required: a task is found through its session)."""
        if not params.context_id:
            return ListTasksResponse()
        principal = self._principal(context)
        with a2a_errors():
            session_id = session_ref(principal, self._agent, params.context_id, "x").session_id
            try:
                records = await self._ctx.sessions.get(session_id).requests()
            except RPCError:
                return ListTasksResponse()
            tasks: list[Task] = []
            for record in records[-(params.page_size or 50) :]:
                ref = session_ref(principal, self._agent, params.context_id, record.request_id)
                tasks.append(await task_snapshot(self._ctx, ref, history=False))
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


def _stops(event: Event) -> bool:
    if isinstance(event, Task | TaskStatusUpdateEvent):
        return event.status.state in STOPPING_STATES
    return False


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
