"""The control commands: steer, inject, cancel, approve, compact, context edits: each one acknowledged Update.

They work on a run or on a session (the same control names and payloads). Registered on
the app by `cli.commands`.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import JsonValue

from cli import inputs, ops, render
from cli.common import Target, say, target_of
from cli.errors import CliError, reported
from cli.params import AddressOpt, ControlId, NamespaceOpt, OpIdOpt, Reason, ReasonOpt, argument, option
from clients import inputs as client_inputs
from clients.sessions import SessionHandle
from contracts import Ack
from contracts.signals import SteerMode


def send_control(
    target: Target,
    workflow_id: str,
    check: Callable[[], object],
    send: Callable[[SessionHandle], Awaitable[Ack]],
) -> None:
    """Check the payload (before connecting), send one acknowledging Update, print its Ack.

    `send` gets a session's handle: its controls are a run's too (same names, same payloads).
    A rejection, the client's or the workflow's, exits 1.
    """

    async def deliver() -> str:
        client = await ops.open_client(target.address, target.namespace)
        ack = await send(ops.sessions_of(client).get(workflow_id))
        say(render.ack_line(ack))
        return ack.status

    with reported(target.address, workflow_id):
        check()
        status = asyncio.run(deliver())
    if status == "rejected":
        raise typer.Exit(1)


def steer(
    ctx: typer.Context,
    workflow_id: ControlId,
    text: Annotated[str, argument(help="Guidance for the agent, read at its next LLM turn.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Who is steering (recorded).")] = None,
    interrupt: Annotated[
        bool, option("--interrupt", help="Interrupt the LLM call (or tool round) in flight and re-plan now.")
    ] = False,
    cancel_tools: Annotated[
        bool,
        option("--cancel-tools", help="With --interrupt: cancel running tools instead of awaiting them."),
    ] = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Steer a running agent with TEXT, read before its next LLM turn.

    With --interrupt the LLM call in flight is cancelled at once (what it had written is
    kept, marked interrupted) and the model is called again with TEXT; during a tool round
    the running tools finish first (--cancel-tools: they are cancelled). WORKFLOW_ID is a
    run's, or a session's (steering its active request; an idle session rejects it with
    `idle`). Prints `queued <input_id>` (`(interrupt)` when something was interrupted) or
    `rejected: <reason>` (exit 1).
    """
    mode: SteerMode = "interrupt" if interrupt else "queue"

    def check() -> object:
        if cancel_tools and not interrupt:
            raise CliError("--cancel-tools applies to an interrupting steer: add --interrupt")
        return client_inputs.steer_input(
            text, expected_request_id=expected_request_id, source=source, mode=mode, cancel_tools=cancel_tools
        )

    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        check,
        lambda handle: handle.steer(
            text, expected_request_id=expected_request_id, source=source, mode=mode, cancel_tools=cancel_tools
        ),
    )


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
    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        lambda: client_inputs.steer_input(
            text, expected_request_id=expected_request_id, source=source, what="inject"
        ),
        lambda handle: handle.inject(text, expected_request_id=expected_request_id, source=source),
    )


def cancel(
    ctx: typer.Context,
    workflow_id: ControlId,
    reason: Annotated[str | None, option(help="Why the run is cancelled (recorded).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Cancel a run (or a session's active request) gracefully; it ends with status `cancelled`."""
    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        lambda: client_inputs.cancel_input(reason),
        lambda handle: handle.cancel(reason),
    )


def approve(
    ctx: typer.Context,
    workflow_id: ControlId,
    call_id: Annotated[str, argument(help="The tool call's id (`show RUN state` lists the waiting ones).")],
    deny: Annotated[bool, option("--deny", help="Deny the call: the model is told so (and why).")] = False,
    reason: Annotated[str | None, option("--reason", help="Why (recorded, and shown to the model).")] = None,
    arguments: Annotated[
        str | None, option("--arguments", help="Edited arguments, a JSON object (approving only).")
    ] = None,
    approver: Annotated[str | None, option(help="Who decides (default: your user name).")] = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Approve (or --deny) tool call CALL_ID of a run that awaits approval.

    WORKFLOW_ID is the run's, or a session's (for its active run; an idle session
    rejects it with `idle`). --arguments replaces the call's arguments; they must fit
    the tool's schema (`invalid_arguments` otherwise, and the call keeps waiting).
    Prints `accepted <call_id>` or `rejected: <reason>` (exit 1: `unknown_call`,
    `approval_not_required`, `already_decided`, `not_running`, ...).
    """
    who = approver or getpass.getuser()
    edited: dict[str, JsonValue] | None = None

    def check() -> object:
        nonlocal edited
        if arguments is not None:
            if deny:
                raise CliError("--arguments edits an approval: drop --deny (or --arguments)")
            edited = inputs.json_object(arguments, "--arguments")
        return client_inputs.approve_input(
            call_id, approved=not deny, reason=reason, arguments=edited, approver=who
        )

    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        check,
        lambda handle: handle.approve(
            call_id, approved=not deny, reason=reason, arguments=edited, approver=who
        ),
    )


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
    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        lambda: client_inputs.compact_input(op_id, model),
        lambda handle: handle.compact(op_id=op_id, model=model),
    )


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
    key, why = op_id or client_inputs.new_id(), reason.value
    send_control(
        target,
        workflow_id,
        lambda: client_inputs.replace_op(new_context, context_ref=context_ref, op_id=key, reason=why),
        lambda handle: handle.replace_context(new_context, context_ref=context_ref, op_id=key, reason=why),
    )


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
    key, why = op_id or client_inputs.new_id(), reason.value
    send_control(
        target_of(ctx, address, namespace),
        workflow_id,
        lambda: client_inputs.switch_op(ref, op_id=key, reason=why),
        lambda handle: handle.switch_context(ref, op_id=key, reason=why),
    )
