"""The `webhook` command: a session's default webhook, shown, set or cleared."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import say
from cli.errors import CliError, reported
from cli.handle_calls import on_handle, send_control, which_session
from cli.option_groups import ServerOptions, SessionRef
from cli.params import option
from clients import session_inputs
from clients.sessions import SessionHandle
from contracts import Ack
from contracts.session import SessionStatus
from contracts.session_config import WebhookInput


def webhook(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    set_url: Annotated[
        str | None, option("--set", help="The session's default webhook from now on (an http(s) URL).")
    ] = None,
    clear: Annotated[bool, option("--clear", help="Remove the session's default webhook.")] = False,
    server: ServerOptions,
) -> None:
    """Show a session's default webhook, or change it (--set URL, --clear) for the requests asked from now on.

    A request that names no webhook of its own calls back to the session's default, else to its
    agent's (`config.webhook_url`). A URL the deployment's REACT_WEBHOOK_ALLOW refuses is
    rejected (`invalid_input`, exit 1) before anything is sent.
    """
    target = server.target(ctx)
    sid, _ = which_session(target, ref)
    if set_url is not None and clear:
        with reported(target.address, sid):
            raise CliError("use --set URL or --clear, not both")
    if set_url is None and not clear:
        status: SessionStatus = on_handle(target, sid, SessionHandle.status)
        say(f"session: {status.webhook_url or '(none)'}")
        say(f"agent:   {status.config.webhook_url or '(none)'}")
        return

    async def send(handle: SessionHandle, payload: WebhookInput) -> Ack:
        return await handle.set_webhook(payload.webhook_url)

    send_control(target, sid, lambda: session_inputs.webhook_input(set_url), send)
