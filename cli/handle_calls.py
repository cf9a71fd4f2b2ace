"""The shapes of a command's Temporal part: which session it means, one call on a handle, one control.

Each command does its local checks first (files, flags, payload limits), inside `reported`
so a failure is one line and exit 1, then one `asyncio.run` that connects and calls the
typed client. A session's handle serves a run too: its controls have the same names and
payloads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer
from temporalio.client import Client

from cli import ops, render
from cli.common import Target, say
from cli.errors import reported
from cli.option_groups import ServerOptions, SessionRef
from cli.session_args import session_and_argument
from clients.runs import RunHandle
from clients.sessions import SessionHandle
from contracts import Ack

T = TypeVar("T")
P = TypeVar("P")


def which_session(
    target: Target, ref: SessionRef, second: str | None = None, name: str = ""
) -> tuple[str, str | None]:
    """The session id and the other positional (`name`; see `session_and_argument`)."""
    with reported(target.address):
        return session_and_argument(ref.session, ref.conversation, ref.session_id, second, name)


def on_session(
    ctx: typer.Context, server: ServerOptions, ref: SessionRef, call: Callable[[SessionHandle], Awaitable[T]]
) -> T:
    """Resolve the session the user means, connect and make `call` on its handle (see `on_handle`)."""
    target = server.target(ctx)
    session_id, _ = which_session(target, ref)
    return on_handle(target, session_id, call)


def on_handle(
    target: Target, workflow_id: str, call: Callable[[SessionHandle], Awaitable[T]], resume: str | None = None
) -> T:
    """Connect and make `call` on the workflow's session handle; a failure is one line and exit 1.

    `resume` is what Ctrl-C says goes on (see `reported`).
    """
    return _connected(
        target, workflow_id, lambda client: call(ops.sessions_of(client).get(workflow_id)), resume
    )


def on_run(target: Target, workflow_id: str, call: Callable[[RunHandle], Awaitable[T]]) -> T:
    """Connect and make `call` on the run's handle; a failure is one line and exit 1."""
    return _connected(target, workflow_id, lambda client: call(ops.runs_of(client).get(workflow_id)), None)


def _connected(
    target: Target, workflow_id: str, call: Callable[[Client], Awaitable[T]], resume: str | None
) -> T:
    async def connected() -> T:
        return await call(await ops.open_client(target.address, target.namespace))

    with reported(target.address, workflow_id, resume):
        return asyncio.run(connected())


def send_control(
    target: Target,
    workflow_id: str,
    build: Callable[[], P],
    send: Callable[[SessionHandle, P], Awaitable[Ack]],
) -> None:
    """Build the payload (checked before connecting), send it as one acknowledging Update, print its Ack.

    A rejection, the client's or the workflow's, exits 1.
    """
    with reported(target.address, workflow_id):
        payload = build()
    ack = on_handle(target, workflow_id, lambda handle: send(handle, payload))
    say(render.ack_line(ack))
    if ack.status == "rejected":
        raise typer.Exit(1)
