"""The session commands that branch, restart or erase a conversation: `fork`, `reset` and `delete`.

`fork SESSION [--seq N] [--id NEW]` starts a new session from the thread as it stood
after entry N (default: the latest) and prints its id; `reset SESSION [--reason R]`
starts the conversation afresh (an op: the thread keeps every entry); `delete SESSION
[--yes]` erases the session and its runs from Temporal for good (its forks are kept:
docs/erasing-data.md). Registered on the app by `cli.session_commands`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import say
from cli.errors import reported
from cli.handle_calls import on_handle, send_control, which_session
from cli.option_groups import ServerOptions, SessionRef
from cli.params import OpIdOpt, option
from clients import session_inputs
from clients.sessions import SessionHandle


def fork(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    seq: Annotated[
        int | None, option(help="Fork after this entry of the thread (default: the latest).")
    ] = None,
    new_id: Annotated[
        str | None, option("--id", help="The new session's id (default: <session>-fork-<n>).")
    ] = None,
    server: ServerOptions,
) -> None:
    """Start a new session from a session's thread at a seq; the original is unchanged."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    with reported(target.address):
        request = session_inputs.fork_input(seq, new_id)
    result = on_handle(target, sid, lambda handle: handle.fork(request))
    say(f"forked {sid} at seq {result.forked_from.seq}: {result.session_id}")


def reset(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    reason: Annotated[str | None, option(help="Why (recorded in the op's meta).")] = None,
    op_id: OpIdOpt = None,
    server: ServerOptions,
) -> None:
    """Start a session's conversation afresh (deferred while a request runs); its thread keeps every entry."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    send_control(target, sid, lambda: session_inputs.reset_input(reason, op_id), SessionHandle.reset_thread)


def delete(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    yes: Annotated[bool, option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    server: ServerOptions,
) -> None:
    """Erase a session for good: terminate it if it runs, delete it and its runs (its forks are kept)."""
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    if not yes:
        typer.confirm(f"erase {sid} and its runs for good?", abort=True)
    erased = on_handle(target, sid, SessionHandle.delete)
    say(
        f"deleted {sid}: {len(erased.runs)} runs, {erased.workflows} workflows, "
        f"{erased.executions} executions"
    )
