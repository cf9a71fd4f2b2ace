"""The run commands: `run` starts a run and follows its trace live; `show` prints what a run's queries answer.

Registered on the app by `cli.commands`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from pydantic import BaseModel
from rich.table import Table

from cli import inputs, ops, render
from cli.common import Target, announce, out, say_lines
from cli.demo import DEMO_QUERY, demo_notice
from cli.errors import CliError, err_console, reported
from cli.handle_calls import on_run
from cli.option_groups import AgentOptions, ServerOptions
from cli.output_schema import OutputSchemaOpt, load_output_schema, print_output
from cli.params import NoStreamOpt, View, WorkflowId, argument, option
from clients import inputs as client_inputs
from clients.runs import RunHandle
from contracts import AgentConfig

M = TypeVar("M", bound=BaseModel)


def run(
    ctx: typer.Context,
    query: Annotated[str | None, argument(help="The user's question (optional for the demo).")] = None,
    workflow_id: Annotated[str | None, option("--id", help="Workflow id (default react-<hex>).")] = None,
    *,
    agent: AgentOptions,
    request_id: Annotated[str | None, option(help="Request id (default: chosen by the run).")] = None,
    no_follow: Annotated[bool, option("--no-follow", help="Print the workflow id and exit.")] = False,
    no_stream: NoStreamOpt = False,
    output_schema: OutputSchemaOpt = None,
    server: ServerOptions,
) -> None:
    """Start a run and follow it live until the final answer: its trace, and the LLM's text as it comes.

    QUERY is the user's question. The model is --model, else $REACT_MODEL; with
    neither (and no --script) the bundled local model runs a calculator demo and
    QUERY may be omitted (`--model scripted`: the scripted demo, no LLM at all).
    The agent streams (--no-stream: it does not, and the trace query is polled).
    With --output-schema the final answer must match that JSON Schema (repaired once,
    else the run fails `invalid_output`); the parsed output is printed as JSON.
    Exits 1 unless the run completes.
    """
    target = server.target(ctx)
    workflow_id = workflow_id or f"react-{uuid.uuid4().hex[:8]}"
    with reported(target.address, workflow_id):
        config, demo = inputs.resolve_config(agent.flags(not no_stream))
        output = load_output_schema(output_schema)
        config = config if output is None else config.model_copy(update={"output": output})
        if demo:
            err_console.print(demo_notice(config), markup=False, soft_wrap=True, style="bold")
            query = query or DEMO_QUERY
        if not query:
            raise CliError("a QUERY is required (only the default demo agent has a default one)")
        client_inputs.run_input(query, config, request_id=request_id)  # limits, before connecting
        ok = asyncio.run(_start_and_follow(target, query, config, request_id, workflow_id, not no_follow))
    if not ok:
        raise typer.Exit(1)


async def _start_and_follow(
    target: Target, query: str, config: AgentConfig, request_id: str | None, workflow_id: str, follow: bool
) -> bool:
    """Start the run; when following, print its trace and outcome. True when it completed."""
    client = await ops.open_client(target.address, target.namespace)
    run = await ops.runs_of(client).start(query, config, workflow_id=workflow_id, request_id=request_id)
    if not follow:
        typer.echo(run.workflow_id)
        return True
    announce(target, "workflow id", run.workflow_id, f"model: {config.model}")
    run = ops.following(client, run.workflow_id)
    result = await ops.follow(run, out, target.address, stream=config.stream)
    say_lines(render.result_lines(result), bold_first=2)
    if config.output is not None and result.status == "completed":
        print_output(result.output)
    return result.status == "completed"


def show(
    ctx: typer.Context,
    workflow_id: WorkflowId,
    what: Annotated[View, argument(help="Which query to show.")] = View.state,
    as_json: Annotated[bool, option("--json", help="Raw JSON instead of tables.")] = False,
    *,
    server: ServerOptions,
) -> None:
    """Show a run's state, thread, context or trace: WHAT names the query (default state)."""
    target = server.target(ctx)
    on_run(target, workflow_id, lambda run: _show(run, what, as_json))


def _print(answer: M, table: Callable[[M], Table], as_json: bool) -> None:
    """A query's answer as JSON, or as its table."""
    if as_json:
        typer.echo(answer.model_dump_json(indent=2))
    else:
        out.print(table(answer))


async def _show(run: RunHandle, what: View, as_json: bool) -> None:
    match what:
        case View.state:
            state = await run.state()
            _print(state, render.state_table, as_json)
            if state.pending_tool_calls and not as_json:
                out.print(render.tool_calls_table(state))
            if state.pending_approvals and not as_json:
                out.print(render.approvals_table(state))
        case View.thread:
            entries = [entry async for entry in run.thread()]
            if as_json:
                return typer.echo(ops.ENTRIES.dump_json(entries, indent=2).decode())
            out.print(render.thread_table(entries))
        case View.context:
            _print(await run.context(), render.context_table, as_json)
        case View.trace:
            _print(await run.trace(), render.trace_table, as_json)
