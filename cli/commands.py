"""The `client.py` app: run (and follow) an agent, steer it, edit its context, inspect it.

Each command does its local checks first (files, flags, payload limits), then one
`asyncio.run` for the Temporal part, all inside `reported` so any failure is one line and
exit 1 (the shapes of that part are `cli.handle_calls`; the options several commands share
are the groups of `cli.option_groups`). The commands live in `cli.run_commands` (run,
show) and `cli.control_commands` (steer, inject, cancel, approve, compact, context); they
are registered here, in the order `--help` lists them. The session commands add themselves
in `cli.session_commands`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli import codec_server
from cli.app import CliApp
from cli.common import Target
from cli.control_commands import approve, cancel, compact, context_replace, context_switch, inject, steer
from cli.option_groups import with_groups
from cli.params import option
from cli.run_commands import run, show
from hosting.connection import DEFAULT_ADDRESS, DEFAULT_NAMESPACE

app = CliApp(
    help="Run, follow, steer and inspect durable ReAct agents on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
context_app = typer.Typer(
    help="Change a run's or a session's context: replace it, or switch lanes.", no_args_is_help=True
)
app.add_typer(context_app, name="context")
app.command("codec-server")(codec_server.codec_server)
app.command("payload")(codec_server.payload)


@app.callback()
def main(
    ctx: typer.Context,
    address: Annotated[
        str, option(envvar="TEMPORAL_ADDRESS", help="Temporal frontend address.")
    ] = DEFAULT_ADDRESS,
    namespace: Annotated[
        str, option(envvar="TEMPORAL_NAMESPACE", help="Temporal namespace.")
    ] = DEFAULT_NAMESPACE,
) -> None:
    """Run, follow, steer and inspect durable ReAct agents on Temporal."""
    ctx.obj = Target(address, namespace)


for command in (run, steer, inject, cancel, approve, compact):
    app.command()(with_groups(command))
context_app.command("replace")(with_groups(context_replace))
context_app.command("switch")(with_groups(context_switch))
app.command()(with_groups(show))
