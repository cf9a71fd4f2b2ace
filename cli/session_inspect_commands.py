"""The session commands that read a session: status, history (its thread or its requests), export, case.

Registered on the app by `cli.session_commands`.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli import ops, render_session, session_ops
from cli.common import out, say_lines
from cli.errors import err_console
from cli.handle_calls import on_session
from cli.option_groups import ServerOptions, SessionRef
from cli.params import JsonOpt, option
from clients.sessions import SessionHandle


def status(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    as_json: JsonOpt = False,
    server: ServerOptions,
) -> None:
    """Show a session's state, active request, model, tools, thread, lane, pending op and agent state."""

    async def show(handle: SessionHandle) -> None:
        answer = await handle.status()
        if as_json:
            return typer.echo(answer.model_dump_json(indent=2))
        out.print(render_session.status_table(answer))
        say_lines(render_session.agent_state_lines(await handle.agent_state()))

    on_session(ctx, server, ref, show)


def history(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    since: Annotated[int, option(min=0, help="Only entries with seq >= SINCE.")] = 0,
    requests: Annotated[bool, option("--requests", help="The requests instead of the thread.")] = False,
    as_json: JsonOpt = False,
    server: ServerOptions,
) -> None:
    """Show a session's thread as readable lines (seq, role, content, tool calls), or its requests."""

    async def show(session: SessionHandle) -> None:
        if requests:
            records = await session.requests()
            if as_json:
                return typer.echo(session_ops.RECORDS.dump_json(records, indent=2).decode())
            return out.print(render_session.requests_table(records))
        entries = [entry async for entry in session.thread(since)]
        if as_json:
            return typer.echo(ops.ENTRIES.dump_json(entries, indent=2).decode())
        say_lines(render_session.history_lines(entries))

    on_session(ctx, server, ref, show)


def export(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    lane: Annotated[str | None, option(help="The lane to export (default: the active one).")] = None,
    ttl: Annotated[float | None, option(help="Lifetime of the token in seconds (default: none).")] = None,
    server: ServerOptions,
) -> None:
    """Print a signed snapshot token of a session's conversation (`ask --snapshot` restores it)."""
    result = on_session(ctx, server, ref, lambda handle: handle.export(context_ref=lane, ttl_s=ttl))
    typer.echo(result.token)
    if result.expires_at is not None:
        err_console.print(f"expires at {result.expires_at:%Y-%m-%d %H:%M:%S %Z}", style="dim")


def case(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    request: Annotated[str | None, option("--request", help="The request (default: the last).")] = None,
    name: Annotated[str | None, option(help="The case's name (default: the request id).")] = None,
    server: ServerOptions,
) -> None:
    """Print a request as an evaluation case (JSON): its query, the tool results its run got, its answer.

    Add it to a dataset's `cases` (docs/evaluations.md, "From a thread"): a run of the case answers
    its tool calls from the recorded results.
    """
    found = on_session(ctx, server, ref, lambda handle: handle.eval_case(request, name=name))
    typer.echo(json.dumps(found, indent=2, ensure_ascii=False))
