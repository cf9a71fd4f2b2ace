"""Edit and regenerate at the gateway: the branch a chat id follows, and making a branch (docs/branches.md).

A protocol's conversation id (the AI SDK's chat id, AG-UI's `threadId`) names a family's root
thread, and keeps naming it after an edit or a regenerate: `head_of` is the thread it reaches
now, the root's newest branch (`SessionStatus.head`), or the root itself. A branch's own thread
id names the branch (it has no head). `branch` forks the thread at a `BranchPoint`
(`clients.branches`) into a thread named like every fork of the root (`<root>-fork-<n>`,
`gateway.owners.fork_session_id`) and records it at the root; the caller then asks there
through the request core, as any ask (quotas, the request id's check).
"""

from __future__ import annotations

from dataclasses import replace

from clients.branches import BranchPoint, MessageRef, edit_point, regenerate_point, start_branch
from contracts.branches import BranchKind
from contracts.errors import NOT_FOUND
from gateway.context import GatewayContext
from gateway.core.requests import RequestCore
from gateway.core.threads import Thread, temporal_reads
from gateway.errors import GatewayError, not_found
from gateway.owners import fork_session_id, parse_session_id

__all__ = ["branch", "edit_at", "head_of", "regenerate_at", "thread_of"]


def thread_of(thread: Thread, session_id: str) -> Thread | None:
    """The thread of one of `thread`'s principal's sessions (its agent version and config), or None."""
    owned = parse_session_id(thread.principal, session_id)
    if owned is None:
        return None
    return replace(thread, agent=owned[0], thread_id=owned[1], session_id=session_id)


async def head_of(core: RequestCore, thread: Thread) -> Thread:
    """The thread `thread`'s id reaches now: its newest branch when it is a family's root, else itself.

    A thread that does not exist yet is itself (the ask starts it); so is a root whose head was
    erased (asking there would start an empty session under the erased thread's id).

    Raises:
        GatewayError: 503 `unavailable`.
    """
    try:
        status = await core.reads.status(thread)
    except GatewayError as error:
        if error.code == NOT_FOUND:
            return thread
        raise
    head = thread_of(thread, status.head) if status.head is not None else None
    if head is None:
        return thread
    try:
        await core.reads.status(head)
    except GatewayError as error:
        if error.code == NOT_FOUND:
            return thread  # the head was erased: the id reaches the root again, never a new empty session
        raise
    return head


async def regenerate_at(core: RequestCore, thread: Thread, request_id: str | None) -> BranchPoint:
    """Where a regenerate of `request_id` (default: the last request) of `thread` branches.

    Raises:
        GatewayError: `not_found`, `busy`, `nothing_to_regenerate`, `unknown_message` (all 400 but the first).
    """
    with temporal_reads():
        return await regenerate_point(core.session(thread), request_id)


async def edit_at(core: RequestCore, thread: Thread, message: MessageRef, text: str) -> BranchPoint:
    """Where an edit of user message `message` of `thread` to `text` branches.

    Raises:
        GatewayError: `not_found`, `busy`, `unknown_message`, `invalid_input`, `payload_too_large`.
    """
    with temporal_reads():
        return await edit_point(core.session(thread), message, text)


async def branch(
    ctx: GatewayContext, core: RequestCore, thread: Thread, point: BranchPoint, kind: BranchKind, asked: str
) -> Thread:
    """Fork `thread` at `point` into a new thread of the family, recorded at its root (the new head).

    `asked` is the request id the caller asks the branch's first message with. Nothing is asked.

    Raises:
        GatewayError: `not_found`, `invalid_input` (the family has its most branches), `unavailable`.
    """
    root = thread_of(thread, point.root_id)
    if root is None:
        raise not_found()
    new_id = await fork_session_id(ctx.client, thread.principal, thread.agent, root.thread_id)
    with temporal_reads():
        made = await start_branch(
            core.session(thread),
            point,
            kind,
            asked_request_id=asked,
            session_id=new_id,
            record=core.session(root).record_branch,
        )
    new = thread_of(thread, made.session_id)
    assert new is not None, "the gateway names every branch with a thread id"
    return new
