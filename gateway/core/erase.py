"""Erasing a thread (its session, runs, and the memories it wrote) and all a principal has.

A thread's erase deletes its session and runs from Temporal and, where asked, the memories its
requests wrote. One place for every surface (`DELETE /api/threads/{agent}/{thread}`, the MCP
tool `delete_thread`, `DELETE /api/admin/principals/{principal}`). A thread's erase goes in an
order that makes a failure leave what can be finished by erasing again:

1. what the session started is found (`SessionHandle.erasable`: its records' runs and the
   children Temporal lists under it, never a fork), and everything running is terminated;
2. with `memories`, the runs' histories name each `memory_save` call: its idempotency key is
   the item's `write_id` (`activities.tools.tool_calls.idempotency_key`), and the principal's
   items last written by those calls are deleted (a store that does not answer: 503, and no
   workflow is deleted yet, so asking again finds the same calls);
3. every execution of the runs and the session is deleted (`clients.erase`);
4. the thread's file records are deleted (`gateway.core.attachments.erase_files`; the blobs stay:
   content-addressed, they may be shared);
5. the erase waits (up to `SETTLE_S`) until Temporal no longer describes the session nor lists
   it, so the thread is 404 on every route and absent from `GET /api/threads` when it answers.

A principal's erase (`erase_principal`) deletes their schedules first (so none fires a new thread
meanwhile), then each of their threads as above, a listing at a time until none is listed, then
every memory item and file record under their name. Asking again finishes a failed one.

Payload-store blobs are not deleted (docs/erasing-data.md: content-addressed, shared by forks),
attachments' bytes included (docs/attachments.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from activities.tools.tool_calls import call_key
from clients.erase import delete_workflows, queryable_id, terminate_all
from clients.errors import RejectedError
from clients.memory import Memory
from clients.run_start import is_not_found
from clients.schedules import Schedules
from contracts.activities import MEMORY_SAVE_ACTIVITY
from contracts.errors import NOT_FOUND
from contracts.run import WORKFLOW_TYPE as RUN_WORKFLOW_TYPE
from gateway.context import GatewayContext
from gateway.core.attachments import erase_files
from gateway.core.listing import list_threads
from gateway.core.store_calls import store_call
from gateway.core.threads import Thread, temporal_reads
from gateway.errors import GatewayError, not_found
from gateway.identity.scopes import MEMORY_WRITE, require

__all__ = ["Erased", "ErasedPrincipal", "erase_principal", "erase_thread"]

SETTLE_S = 45.0
"""How long an erase waits for Temporal to stop describing and listing the deleted session: a
server with Temporal's default queue ack interval (30 s) deletes within it; with the product's
dynamic config (`hosting.dev_server.QUEUE_ACK_INTERVAL`) it takes about a second."""
SETTLE_POLL_S = (0.05, 0.1, 0.2, 0.5)


@dataclass(frozen=True)
class Erased:
    """What an erase deleted."""

    workflows: int
    """Workflow ids: the session, its runs, and the other workflows it started."""
    runs: int
    executions: int
    """Workflow executions (a continued-as-new session has several)."""
    memories: int | None
    """Memory items deleted (None: not asked)."""
    files: int = 0
    """File records deleted (the thread's attachments)."""

    def json(self) -> dict[str, int | None]:
        """The counts as the routes answer them."""
        return {
            "workflows": self.workflows,
            "runs": self.runs,
            "executions": self.executions,
            "memories": self.memories,
            "files": self.files,
        }


@dataclass(frozen=True)
class ErasedPrincipal:
    """What erasing a principal deleted."""

    threads: int
    schedules: int
    workflows: int
    """Workflow ids of every thread: the sessions, their runs, and the other workflows they started."""
    memories: int
    files: int
    """File records (the thread erases' and any left under the principal's name)."""

    def json(self) -> dict[str, int]:
        """The counts as the route answers them."""
        return {
            "threads": self.threads,
            "schedules": self.schedules,
            "workflows": self.workflows,
            "memories": self.memories,
            "files": self.files,
        }


async def erase_thread(ctx: GatewayContext, memory: Memory, thread: Thread, *, memories: bool) -> Erased:
    """Erase `thread` (see the module docstring); `memory`: the gateway's store client.

    Raises:
        GatewayError: 404 `not_found` (no such thread, or another principal's: nothing is
            deleted), 403 `forbidden` (`memories` without `memory:write`), 503 `unavailable`.
    """
    if memories:
        require(thread.principal, MEMORY_WRITE)
    return await _erase_session(ctx, memory, thread.principal.name, thread.session_id, memories=memories)


async def erase_principal(ctx: GatewayContext, memory: Memory, principal: str) -> ErasedPrincipal:
    """Erase everything `principal` has: schedules, threads (sessions, runs), memory items.

    The caller checked the `agents:admin` scope and `principal`'s pattern.

    Raises:
        GatewayError: 503 `unavailable` (Temporal or the store did not answer: ask again).
    """
    schedules = Schedules(ctx.client, task_queue=ctx.settings.task_queue)
    with temporal_reads():
        owned = await schedules.list(principal)
        for schedule in owned:
            with contextlib.suppress(RejectedError):  # deleted meanwhile
                await schedules.delete(schedule.schedule_id)
    threads = workflows = files = 0
    seen: set[str] = set()
    while listed := [t for t in await list_threads(ctx, principal) if t.session_id not in seen]:
        for thread in listed:
            seen.add(thread.session_id)  # listed until visibility catches up with its deletion
            try:
                erased = await _erase_session(ctx, memory, principal, thread.session_id, memories=False)
            except GatewayError as error:
                if error.code != NOT_FOUND:
                    raise
                continue  # erased meanwhile
            threads += 1
            workflows += erased.workflows
            files += erased.files
    memories = await store_call(memory.of(principal).delete_all())
    files += await store_call(ctx.files.delete_principal(principal))
    return ErasedPrincipal(
        threads=threads, schedules=len(owned), workflows=workflows, memories=memories, files=files
    )


async def _erase_session(
    ctx: GatewayContext, memory: Memory, principal: str, session_id: str, *, memories: bool
) -> Erased:
    """Erase the session `session_id` of `principal` (the module docstring's four steps)."""
    session = ctx.sessions.get(session_id)
    with temporal_reads():
        try:
            found = await session.erasable()
        except RejectedError:
            raise not_found("thread") from None
        await terminate_all(ctx.client, session_id, found)
        deleted_memories: int | None = None
        if memories:
            runs = [workflow_id for workflow_id, kind in found.items() if kind == RUN_WORKFLOW_TYPE]
            write_ids = [write for run in runs for write in await _memory_writes(ctx.client, run)]
            deleted_memories = await store_call(memory.of(principal).delete_written(write_ids))
        erased = await delete_workflows(ctx.client, session_id, found)
        files = await erase_files(ctx, principal, session_id)
        await _gone(ctx.client, session_id)
    return Erased(
        workflows=erased.workflows,
        runs=len(erased.runs),
        executions=erased.executions,
        memories=deleted_memories,
        files=files,
    )


async def _memory_writes(client: Client, run_workflow_id: str) -> list[str]:
    """The write ids of the `memory_save` calls in every execution of the run's history."""
    run_ids: list[str] = []
    if queryable_id(run_workflow_id):
        async for execution in client.list_workflows(f"WorkflowId = '{run_workflow_id}'"):
            run_ids.append(execution.run_id)
    if not run_ids:
        try:
            run_ids.append((await client.get_workflow_handle(run_workflow_id).describe()).run_id)
        except RPCError as error:
            if is_not_found(error):
                return []
            raise
    writes: list[str] = []
    for run_id in run_ids:
        handle = client.get_workflow_handle(run_workflow_id, run_id=run_id)
        async for event in handle.fetch_history_events():
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == MEMORY_SAVE_ACTIVITY:
                writes.append(call_key(run_workflow_id, run_id, scheduled.activity_id))
    return writes


async def _gone(client: Client, session_id: str) -> None:
    """Wait (up to `SETTLE_S`) until Temporal neither describes nor lists the session."""
    handle = client.get_workflow_handle(session_id)
    with contextlib.suppress(TimeoutError):  # answered as deleted: Temporal finishes on its own
        await asyncio.wait_for(_until_gone(client, handle, session_id), SETTLE_S)


async def _until_gone(client: Client, handle: WorkflowHandle[Any, Any], session_id: str) -> None:
    polls = 0
    while True:
        try:
            await handle.describe()
        except RPCError as error:
            if not is_not_found(error):
                raise
            if not queryable_id(session_id):
                return
            if not (await client.count_workflows(f"WorkflowId = '{session_id}'")).count:
                return
        await asyncio.sleep(SETTLE_POLL_S[min(polls, len(SETTLE_POLL_S) - 1)])
        polls += 1
