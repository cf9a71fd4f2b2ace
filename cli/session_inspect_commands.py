"""The session commands that read a session: status, history (its thread or its requests) and export.

Registered on the app by `cli.session_commands`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cli import ops, render_session, session_ops
from cli.common import out, say_lines, target_of
from cli.errors import err_console, reported
from cli.params import AddressOpt, ConversationOpt, JsonOpt, NamespaceOpt, SessionArg, SessionOpt, option
from cli.session_args import session_and_argument


def status(
    ctx: typer.Context,
    session_id: SessionArg = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    as_json: JsonOpt = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show a session's state, active request, model, tools, thread, lane, pending op and agent state."""
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, _ = session_and_argument(session, conversation, session_id, None, "")

    async def show() -> None:
        client = await ops.open_client(target.address, target.namespace)
        handle = ops.sessions_of(client).get(sid)
        answer = await handle.status()
        if as_json:
            return typer.echo(answer.model_dump_json(indent=2))
        out.print(render_session.status_table(answer))
        say_lines(render_session.agent_state_lines(await handle.agent_state()))

    with reported(target.address, sid):
        asyncio.run(show())


def history(
    ctx: typer.Context,
    session_id: SessionArg = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    since: Annotated[int, option(min=0, help="Only entries with seq >= SINCE.")] = 0,
    requests: Annotated[bool, option("--requests", help="The requests instead of the thread.")] = False,
    as_json: JsonOpt = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show a session's thread as readable lines (seq, role, content, tool calls), or its requests."""
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, _ = session_and_argument(session, conversation, session_id, None, "")

    async def show() -> None:
        client = await ops.open_client(target.address, target.namespace)
        session = ops.sessions_of(client).get(sid)
        if requests:
            records = await session.requests()
            if as_json:
                return typer.echo(session_ops.RECORDS.dump_json(records, indent=2).decode())
            return out.print(render_session.requests_table(records))
        entries = [entry async for entry in session.thread(since)]
        if as_json:
            return typer.echo(ops.ENTRIES.dump_json(entries, indent=2).decode())
        say_lines(render_session.history_lines(entries))

    with reported(target.address, sid):
        asyncio.run(show())


def export(
    ctx: typer.Context,
    session_id: SessionArg = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    lane: Annotated[str | None, option(help="The lane to export (default: the active one).")] = None,
    ttl: Annotated[float | None, option(help="Lifetime of the token in seconds (default: none).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Print a signed snapshot token of a session's conversation (`ask --snapshot` restores it)."""
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, _ = session_and_argument(session, conversation, session_id, None, "")

    async def run_export() -> None:
        client = await ops.open_client(target.address, target.namespace)
        result = await ops.sessions_of(client).get(sid).export(context_ref=lane, ttl_s=ttl)
        typer.echo(result.token)
        if result.expires_at is not None:
            err_console.print(f"expires at {result.expires_at:%Y-%m-%d %H:%M:%S %Z}", style="dim")

    with reported(target.address, sid):
        asyncio.run(run_export())
