"""The commands that branch a conversation to ask again: `regenerate`, `edit`, `branches` (docs/branches.md).

`regenerate SESSION [--request R] [--id NEW]` forks the thread right before request R's
message (default: the last request) and asks it again there; `edit SESSION MESSAGE TEXT`
forks right before user message MESSAGE (its seq, or the id of the request that asked it) and
asks TEXT there. Both wait for the answer and print the branch's id and the answer; the
original session keeps its own. `branches SESSION` lists the session's family: the root, then
each branch with where it forked and its first message. Registered by `cli.session_commands`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import say
from cli.handle_calls import on_handle, which_session
from cli.option_groups import ServerOptions, SessionRef
from cli.params import argument, option
from clients.branches import Branched, MessageRef
from clients.sessions import SessionHandle
from contracts.session import RequestResult
from contracts.whole_numbers import whole_number

BranchIdOpt = Annotated[
    str | None, option("--id", help="The branch's session id (default: <session>-fork-<n>).")
]


def regenerate(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    request: Annotated[
        str | None, option("--request", help="The request to ask again (default: the last).")
    ] = None,
    new_id: BranchIdOpt = None,
    server: ServerOptions,
) -> None:
    """Ask a request again on a new branch forked right before it; the original keeps its answer."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)

    async def call(handle: SessionHandle) -> tuple[Branched, RequestResult]:
        made = await handle.regenerate(request, session_id=new_id)
        return made, await _answer(handle, made)

    _report(*on_handle(target, sid, call))


def edit(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    message: Annotated[
        str, argument(help="The user message: its seq, or the id of the request that asked it.")
    ],
    text: Annotated[str, argument(help="The edited message.")],
    new_id: BranchIdOpt = None,
    server: ServerOptions,
) -> None:
    """Ask TEXT in place of an earlier user message, on a new branch forked right before it."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    number = whole_number(message)
    named: MessageRef = number if number is not None else message

    async def call(handle: SessionHandle) -> tuple[Branched, RequestResult]:
        made = await handle.edit(named, text, session_id=new_id)
        return made, await _answer(handle, made)

    _report(*on_handle(target, sid, call))


def branches(ctx: typer.Context, *, ref: SessionRef, server: ServerOptions) -> None:
    """List a session's family: its root, then each branch (where it forked, its first message)."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    family = on_handle(target, sid, SessionHandle.branches)
    say(f"{family.root_id} (root)")
    for b in family.branches:
        say(f"{b.session_id}: {b.kind} of {b.parent_id} at seq {b.message_seq}: {b.text}")


async def _answer(handle: SessionHandle, made: Branched) -> RequestResult:
    branch = handle.sibling(made.branch.session_id)
    return await branch.await_result(made.accepted.request_id)


def _report(made: Branched, result: RequestResult) -> None:
    say(f"branched {made.branch.parent_id} at seq {made.branch.seq}: {made.branch.session_id}")
    say(result.result or f"({result.status})")
