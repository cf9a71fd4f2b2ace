"""The `client.py` commands: run (and follow) an agent, steer it, edit its context, inspect it.

Each command does its local checks first (files, flags), then one `asyncio.run`
for the Temporal part, all inside `reported` so any failure is one line and exit 1.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cli import inputs, ops, render
from cli.app import CliApp
from cli.demo import DEMO_NOTICE, DEMO_QUERY, DEMO_TOOL, demo_script
from cli.errors import CliError, err_console, reported
from cli.params import (
    AddressOpt,
    NamespaceOpt,
    OpIdOpt,
    Reason,
    ReasonOpt,
    View,
    WorkflowId,
    argument,
    option,
)
from contracts import SCRIPTED_MODEL, CancelInput, RunInput, SteerInput
from conversation import ContextModifyInput, OperationInput
from runtime.connection import DEFAULT_ADDRESS, DEFAULT_NAMESPACE, temporal_address, temporal_namespace

DEFAULT_UI_URL = "http://localhost:8233"

out = Console(highlight=False)
app = CliApp(
    help="Run, follow, steer and inspect durable ReAct agents on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
context_app = typer.Typer(help="Change a run's context: replace it, or switch lanes.", no_args_is_help=True)
app.add_typer(context_app, name="context")


@dataclass(frozen=True)
class Target:
    """Where the Temporal server is: set globally, overridable per command."""

    address: str
    namespace: str


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


def _target(ctx: typer.Context, address: str | None, namespace: str | None) -> Target:
    base = ctx.find_object(Target) or Target(temporal_address(), temporal_namespace())
    return Target(address or base.address, namespace or base.namespace)


def _say(text: str, style: str = "") -> None:
    out.print(text, style=style, markup=False, soft_wrap=True)


@app.command()
def run(
    ctx: typer.Context,
    query: Annotated[str | None, argument(help="The user's question (optional for the demo).")] = None,
    workflow_id: Annotated[str | None, option("--id", help="Workflow id (default react-<hex>).")] = None,
    model: Annotated[str | None, option(help="litellm model string (default: $REACT_MODEL).")] = None,
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
    neither (and no --script) a scripted demo runs, no LLM is called, and QUERY
    may be omitted. Exits 1 unless the run completes.
    """
    target = _target(ctx, address, namespace)
    workflow_id = workflow_id or f"react-{uuid.uuid4().hex[:8]}"
    with reported(target.address, workflow_id):
        tools = list(dict.fromkeys(tool or []))
        turns = inputs.load_script(script) if script is not None else []
        if script is not None and model not in (None, SCRIPTED_MODEL):
            raise CliError(f"--script runs the {SCRIPTED_MODEL!r} model: drop --model {model}")
        chosen = SCRIPTED_MODEL if script is not None else model or os.environ.get("REACT_MODEL", "").strip()
        if not chosen:
            err_console.print(DEMO_NOTICE, markup=False, soft_wrap=True, style="bold")
            chosen, turns, tools = SCRIPTED_MODEL, demo_script(), list(dict.fromkeys([DEMO_TOOL, *tools]))
            query = query or DEMO_QUERY
        if not query:
            raise CliError("a QUERY is required (only the scripted demo has a default one)")
        settings: dict[str, object] = {"model": chosen, "tools": tools, "script": turns}
        if system_prompt is not None:
            settings["system_prompt"] = system_prompt
        if max_iterations is not None:
            settings["max_iterations"] = max_iterations
        run_input = RunInput(query=query, request_id=request_id, config=inputs.agent_config(settings))
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
    base = os.environ.get("TEMPORAL_UI_URL")
    link = render.ui_link(base or DEFAULT_UI_URL, target.namespace, handle.id)
    _say(f"workflow id: {handle.id}", "bold")
    hint = "" if base else "  (dev server UI; with docker compose use port 8080 or set TEMPORAL_UI_URL)"
    _say(f"Web UI: {link}{hint}")
    _say(f"model: {run_input.config.model}; following the trace (Ctrl-C stops following, not the run)", "dim")
    result = await ops.follow(handle, out, target.address)
    for index, line in enumerate(render.result_lines(result)):
        _say(line, "bold" if index < 2 else "")
    return result.status == "completed"


def _send(
    target: Target, workflow_id: str, name: str, payload: SteerInput | ContextModifyInput | CancelInput
) -> None:
    """Send one acknowledging Update and print its Ack; a rejection exits 1."""

    async def send() -> str:
        client = await ops.open_client(target.address, target.namespace)
        ack = await ops.update(client.get_workflow_handle(workflow_id), name, payload)
        _say(render.ack_line(ack))
        return ack.status

    with reported(target.address, workflow_id):
        status = asyncio.run(send())
    if status == "rejected":
        raise typer.Exit(1)


@app.command()
def steer(
    ctx: typer.Context,
    workflow_id: WorkflowId,
    text: Annotated[str, argument(help="Guidance for the agent, read at its next LLM turn.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Who is steering (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Steer a running agent with TEXT, read before its next LLM turn.

    Prints `queued <input_id>` or `rejected: <reason>` (exit 1).
    """
    payload = SteerInput(content=text, expected_request_id=expected_request_id, source=source)
    _send(_target(ctx, address, namespace), workflow_id, "steer", payload)


@app.command()
def inject(
    ctx: typer.Context,
    workflow_id: WorkflowId,
    text: Annotated[str, argument(help="Input to add to the conversation as user content.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Where the input comes from (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Inject TEXT into a running agent's conversation as new input.

    Prints `queued <input_id>` or `rejected: <reason>` (exit 1).
    """
    payload = SteerInput(content=text, expected_request_id=expected_request_id, source=source)
    _send(_target(ctx, address, namespace), workflow_id, "inject", payload)


@app.command()
def cancel(
    ctx: typer.Context,
    workflow_id: WorkflowId,
    reason: Annotated[str | None, option(help="Why the run is cancelled (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Cancel a run gracefully; it ends with status `cancelled`."""
    _send(_target(ctx, address, namespace), workflow_id, "cancel", CancelInput(reason=reason))


@context_app.command("replace")
def context_replace(
    ctx: typer.Context,
    workflow_id: WorkflowId,
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
    target = _target(ctx, address, namespace)
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
    workflow_id: WorkflowId,
    ref: Annotated[str, argument(help="The lane to switch to.")],
    op_id: OpIdOpt = None,
    reason: ReasonOpt = Reason.manual,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Switch the run to the context lane REF; the Ack says whether it was applied or deferred."""
    operation = OperationInput(type="switch", reason=reason.value)
    payload = ContextModifyInput(op_id=op_id or str(uuid.uuid4()), context_ref=ref, operation=operation)
    _send(_target(ctx, address, namespace), workflow_id, "context_modify", payload)


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
    target = _target(ctx, address, namespace)
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
