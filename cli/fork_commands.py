"""The session commands that branch or restart a conversation: `fork` and `reset`.

`fork SESSION [--seq N] [--id NEW]` starts a new session from the thread as it stood
after entry N (default: the latest) and prints its id; `reset SESSION [--reason R]`
starts the conversation afresh (an op: the thread keeps every entry). Registered on
the app by `cli.session_commands`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cli import ops, render
from cli.common import say, target_of
from cli.errors import reported
from cli.params import AddressOpt, ConversationOpt, NamespaceOpt, OpIdOpt, SessionArg, SessionOpt, option
from cli.session_args import session_and_argument
from clients import inputs as client_inputs
from contracts.session import ForkInput, ResetInput


def fork(
    ctx: typer.Context,
    session_id: SessionArg = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    seq: Annotated[
        int | None, option(help="Fork after this entry of the thread (default: the latest).")
    ] = None,
    new_id: Annotated[
        str | None, option("--id", help="The new session's id (default: <session>-fork-<n>).")
    ] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Start a new session from a session's thread at a seq; the original is unchanged."""
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, _ = session_and_argument(session, conversation, session_id, None, "")
        client_inputs.checked(ForkInput, {"seq": seq, "session_id": new_id}, "fork")

    async def run_fork() -> None:
        client = await ops.open_client(target.address, target.namespace)
        result = await ops.sessions_of(client).get(sid).fork(seq=seq, session_id=new_id)
        say(f"forked {sid} at seq {result.forked_from.seq}: {result.session_id}")

    with reported(target.address, sid):
        asyncio.run(run_fork())


def reset(
    ctx: typer.Context,
    session_id: SessionArg = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    reason: Annotated[str | None, option(help="Why (recorded in the op's meta).")] = None,
    op_id: OpIdOpt = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Start a session's conversation afresh (deferred while a request runs); its thread keeps every entry."""
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, _ = session_and_argument(session, conversation, session_id, None, "")
        client_inputs.checked(ResetInput, {"op_id": op_id, "reason": reason}, "reset_thread")

    async def run_reset() -> str:
        client = await ops.open_client(target.address, target.namespace)
        ack = await ops.sessions_of(client).get(sid).reset_thread(reason=reason, op_id=op_id)
        say(render.ack_line(ack))
        return ack.status

    with reported(target.address, sid):
        status = asyncio.run(run_reset())
    if status == "rejected":
        raise typer.Exit(1)
