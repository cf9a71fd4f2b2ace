"""The `client.py` commands: run (and follow) an agent, steer it, edit its context, inspect it.

Each command does its local checks first (files, flags), then one `asyncio.run`
for the Temporal part, all inside `reported` so any failure is one line and exit 1.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Annotated

import typer

from cli import codec_server, inputs, ops, render
from cli.app import CliApp
from cli.common import Target, announce, out, say, say_lines, target_of
from cli.demo import DEMO_QUERY, demo_notice
from cli.errors import CliError, err_console, reported
from cli.params import (
    AddressOpt,
    ApiBaseOpt,
    ControlId,
    ModelOpt,
    NamespaceOpt,
    OpIdOpt,
    Reason,
    ReasonOpt,
    View,
    WorkflowId,
    argument,
    option,
)
from contracts import CancelInput, RunInput, SteerInput
from contracts.compaction import CompactInput
from conversation import ContextModifyInput, OperationInput
from runtime.connection import DEFAULT_ADDRESS, DEFAULT_NAMESPACE

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


@app.command()
def run(
    ctx: typer.Context,
    query: Annotated[str | None, argument(help="The user's question (optional for the demo).")] = None,
    workflow_id: Annotated[str | None, option("--id", help="Workflow id (default react-<hex>).")] = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    tool: Annotated[list[str] | None, option(help="A tool the agent may call (repeatable).")] = None,
    system_prompt: Annotated[str | None, option(help="System prompt of the agent.")] = None,
    max_iterations: Annotated[int | None, option(min=1, help="LLM turns before giving up.")] = None,
    script: Annotated[Path | None, option(help="JSON list of script turns (scripted model).")] = None,
    request_id: Annotated[str | None, option(help="Request id (default: chosen by the run).")] = None,
    no_follow: Annotated[bool, option("--no-follow", help="Print the workflow id and exit.")] = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Start a run and follow its trace live until the final answer.

    QUERY is the user's question. The model is --model, else $REACT_MODEL; with
    neither (and no --script) the bundled local model runs a calculator demo and
    QUERY may be omitted (`--model scripted`: the scripted demo, no LLM at all).
    Exits 1 unless the run completes.
    """
    target = target_of(ctx, address, namespace)
    workflow_id = workflow_id or f"react-{uuid.uuid4().hex[:8]}"
    with reported(target.address, workflow_id):
        flags = inputs.AgentFlags(model, tuple(tool or ()), system_prompt, max_iterations, script, api_base)
        config, demo = inputs.resolve_config(flags)
        if demo:
            err_console.print(demo_notice(config), markup=False, soft_wrap=True, style="bold")
            query = query or DEMO_QUERY
        if not query:
            raise CliError("a QUERY is required (only the default demo agent has a default one)")
        run_input = RunInput(query=query, request_id=request_id, config=config)
        ok = asyncio.run(_start_and_follow(target, run_input, workflow_id, follow=not no_follow))
    if not ok:
        raise typer.Exit(1)


async def _start_and_follow(target: Target, run_input: RunInput, workflow_id: str, follow: bool) -> bool:
    """Start the run; when following, print its trace and outcome. True when it completed."""
    client = await ops.open_client(target.address, target.namespace)
    handle = await ops.start(client, run_input, workflow_id)
    if not follow:
        typer.echo(handle.id)
        return True
    announce(target, "workflow id", handle.id, f"model: {run_input.config.model}")
    result = await ops.follow(handle, out, target.address)
    say_lines(render.result_lines(result), bold_first=2)
    return result.status == "completed"


def _send(
    target: Target,
    workflow_id: str,
    name: str,
    payload: SteerInput | ContextModifyInput | CancelInput | CompactInput,
) -> None:
    """Send one acknowledging Update and print its Ack; a rejection exits 1."""

    async def send() -> str:
        client = await ops.open_client(target.address, target.namespace)
        ack = await ops.update(client.get_workflow_handle(workflow_id), name, payload)
        say(render.ack_line(ack))
        return ack.status

    with reported(target.address, workflow_id):
        status = asyncio.run(send())
    if status == "rejected":
        raise typer.Exit(1)


@app.command()
def steer(
    ctx: typer.Context,
    workflow_id: ControlId,
    text: Annotated[str, argument(help="Guidance for the agent, read at its next LLM turn.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Who is steering (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Steer a running agent with TEXT, read before its next LLM turn.

    WORKFLOW_ID is a run's, or a session's (steering its active request; an idle
    session rejects it with `idle`). Prints `queued <input_id>` or `rejected: <reason>` (exit 1).
    """
    payload = SteerInput(content=text, expected_request_id=expected_request_id, source=source)
    _send(target_of(ctx, address, namespace), workflow_id, "steer", payload)


@app.command()
def inject(
    ctx: typer.Context,
    workflow_id: ControlId,
    text: Annotated[str, argument(help="Input to add to the conversation as user content.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Where the input comes from (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Inject TEXT into a running agent's conversation as new input.

    WORKFLOW_ID is a run's, or a session's (for its active request).
    Prints `queued <input_id>` or `rejected: <reason>` (exit 1).
    """
    payload = SteerInput(content=text, expected_request_id=expected_request_id, source=source)
    _send(target_of(ctx, address, namespace), workflow_id, "inject", payload)


@app.command()
def cancel(
    ctx: typer.Context,
    workflow_id: ControlId,
    reason: Annotated[str | None, option(help="Why the run is cancelled (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Cancel a run (or a session's active request) gracefully; it ends with status `cancelled`."""
    _send(target_of(ctx, address, namespace), workflow_id, "cancel", CancelInput(reason=reason))


@app.command()
def compact(
    ctx: typer.Context,
    workflow_id: ControlId,
    op_id: OpIdOpt = None,
    model: Annotated[
        str | None, option(help="Summary model (default: the agent's; a cheaper one works).")
    ] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Compact a session's active lane: older turns become a summary (deferred while a request runs)."""
    _send(target_of(ctx, address, namespace), workflow_id, "compact", CompactInput(op_id=op_id, model=model))


@context_app.command("replace")
def context_replace(
    ctx: typer.Context,
    workflow_id: ControlId,
    op_id: OpIdOpt = None,
    context_ref: Annotated[str | None, option(help="Lane to replace (default: the active one).")] = None,
    file: Annotated[Path | None, option(help="JSON context: {system_prompt, messages}.")] = None,
    system_prompt: Annotated[str | None, option(help="System prompt of the new context.")] = None,
    message: Annotated[list[str] | None, option(help="role:content, role user|assistant.")] = None,
    reason: ReasonOpt = Reason.manual,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Replace a lane's context (from --file, or from --system-prompt and --message)."""
    target = target_of(ctx, address, namespace)
    with reported(target.address, workflow_id):
        new_context = inputs.replacement_context(file, system_prompt, message or [])
    operation = OperationInput(type="replace", reason=reason.value, result_context=new_context)
    payload = ContextModifyInput(
        op_id=op_id or str(uuid.uuid4()), context_ref=context_ref, operation=operation
    )
    _send(target, workflow_id, "context_modify", payload)


@context_app.command("switch")
def context_switch(
    ctx: typer.Context,
    workflow_id: ControlId,
    ref: Annotated[str, argument(help="The lane to switch to.")],
    op_id: OpIdOpt = None,
    reason: ReasonOpt = Reason.manual,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Switch the run to the context lane REF; the Ack says whether it was applied or deferred."""
    operation = OperationInput(type="switch", reason=reason.value)
    payload = ContextModifyInput(op_id=op_id or str(uuid.uuid4()), context_ref=ref, operation=operation)
    _send(target_of(ctx, address, namespace), workflow_id, "context_modify", payload)


@app.command()
def show(
    ctx: typer.Context,
    workflow_id: WorkflowId,
    what: Annotated[View, argument(help="Which query to show.")] = View.state,
    as_json: Annotated[bool, option("--json", help="Raw JSON instead of tables.")] = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Show a run's state, thread, context or trace: WHAT names the query (default state)."""
    target = target_of(ctx, address, namespace)
    with reported(target.address, workflow_id):
        asyncio.run(_show(target, workflow_id, what, as_json))


async def _show(target: Target, workflow_id: str, what: View, as_json: bool) -> None:
    client = await ops.open_client(target.address, target.namespace)
    handle = client.get_workflow_handle(workflow_id)
    match what:
        case View.state:
            state = await ops.query_state(handle)
            if as_json:
                return typer.echo(state.model_dump_json(indent=2))
            out.print(render.state_table(state))
            if state.pending_tool_calls:
                out.print(render.tool_calls_table(state))
        case View.thread:
            entries = await ops.query_thread(handle)
            if as_json:
                return typer.echo(ops.ENTRIES.dump_json(entries, indent=2).decode())
            out.print(render.thread_table(entries))
        case View.context:
            context = await ops.query_context(handle)
            if as_json:
                return typer.echo(context.model_dump_json(indent=2))
            out.print(render.context_table(context))
        case View.trace:
            trace = await ops.query_trace(handle)
            if as_json:
                return typer.echo(trace.model_dump_json(indent=2))
            out.print(render.trace_table(trace))
