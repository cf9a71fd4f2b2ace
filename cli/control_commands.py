"""The control commands: steer, inject, cancel, approve, compact, context edits: each one acknowledged Update.

They work on a run or on a session (the same control names and payloads). Registered on
the app by `cli.commands`.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer

from cli import inputs
from cli.errors import CliError
from cli.handle_calls import send_control
from cli.option_groups import ServerOptions
from cli.params import ControlId, OpIdOpt, Reason, ReasonOpt, argument, option
from clients import inputs as client_inputs
from clients import session_inputs
from clients.sessions import SessionHandle
from contracts import SteerInput
from contracts.approval import ApproveInput
from conversation import ContextModifyInput


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
    *,
    server: ServerOptions,
) -> None:
    """Steer a running agent with TEXT, read before its next LLM turn.

    With --interrupt the LLM call in flight is cancelled at once (what it had written is
    kept, marked interrupted) and the model is called again with TEXT; during a tool round
    the running tools finish first (--cancel-tools: they are cancelled). WORKFLOW_ID is a
    run's, or a session's (steering its active request; an idle session rejects it with
    `idle`). Prints `queued <input_id>` (`(interrupt)` when something was interrupted) or
    `rejected: <reason>` (exit 1).
    """

    def build() -> SteerInput:
        if cancel_tools and not interrupt:
            raise CliError("--cancel-tools applies to an interrupting steer: add --interrupt")
        mode = "interrupt" if interrupt else "queue"
        return client_inputs.steer_input(
            text, expected_request_id=expected_request_id, source=source, mode=mode, cancel_tools=cancel_tools
        )

    send_control(server.target(ctx), workflow_id, build, SessionHandle.steer)


def inject(
    ctx: typer.Context,
    workflow_id: ControlId,
    text: Annotated[str, argument(help="Input to add to the conversation as user content.")],
    expected_request_id: Annotated[str | None, option(help="Only if the run has this request id.")] = None,
    source: Annotated[str | None, option(help="Where the input comes from (recorded).")] = None,
    *,
    server: ServerOptions,
) -> None:
    """Inject TEXT into a running agent's conversation as new input.

    WORKFLOW_ID is a run's, or a session's (for its active request).
    Prints `queued <input_id>` or `rejected: <reason>` (exit 1).
    """
    send_control(
        server.target(ctx),
        workflow_id,
        lambda: client_inputs.steer_input(
            text, expected_request_id=expected_request_id, source=source, what="inject"
        ),
        SessionHandle.inject,
    )


def cancel(
    ctx: typer.Context,
    workflow_id: ControlId,
    reason: Annotated[str | None, option(help="Why the run is cancelled (recorded).")] = None,
    *,
    server: ServerOptions,
) -> None:
    """Cancel a run (or a session's active request) gracefully; it ends with status `cancelled`."""
    send_control(
        server.target(ctx),
        workflow_id,
        lambda: client_inputs.cancel_input(reason),
        SessionHandle.cancel,
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
    *,
    server: ServerOptions,
) -> None:
    """Approve (or --deny) tool call CALL_ID of a run that awaits approval.

    WORKFLOW_ID is the run's, or a session's (for its active run; an idle session
    rejects it with `idle`). --arguments replaces the call's arguments; they must fit
    the tool's schema (`invalid_arguments` otherwise, and the call keeps waiting).
    Prints `accepted <call_id>` or `rejected: <reason>` (exit 1: `unknown_call`,
    `approval_not_required`, `already_decided`, `not_running`, ...).
    """

    def build() -> ApproveInput:
        edited = None
        if arguments is not None:
            if deny:
                raise CliError("--arguments edits an approval: drop --deny (or --arguments)")
            edited = inputs.json_object(arguments, "--arguments")
        who = approver or getpass.getuser()
        return client_inputs.approve_input(
            call_id, approved=not deny, reason=reason, arguments=edited, approver=who
        )

    send_control(server.target(ctx), workflow_id, build, SessionHandle.approve)


def compact(
    ctx: typer.Context,
    workflow_id: ControlId,
    op_id: OpIdOpt = None,
    model: Annotated[
        str | None, option(help="Summary model (default: the agent's; a cheaper one works).")
    ] = None,
    *,
    server: ServerOptions,
) -> None:
    """Compact a session's active lane: older turns become a summary (deferred while a request runs)."""
    send_control(
        server.target(ctx),
        workflow_id,
        lambda: session_inputs.compact_input(op_id, model),
        SessionHandle.compact,
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
    *,
    server: ServerOptions,
) -> None:
    """Replace a lane's context (from --file, or from --system-prompt and --message)."""

    def build() -> ContextModifyInput:
        new_context = inputs.replacement_context(file, system_prompt, message or [])
        return client_inputs.replace_op(
            new_context, context_ref=context_ref, op_id=op_id, reason=reason.value
        )

    send_control(server.target(ctx), workflow_id, build, SessionHandle.context_modify)


def context_switch(
    ctx: typer.Context,
    workflow_id: ControlId,
    ref: Annotated[str, argument(help="The lane to switch to.")],
    op_id: OpIdOpt = None,
    reason: ReasonOpt = Reason.manual,
    *,
    server: ServerOptions,
) -> None:
    """Switch the run to the context lane REF; the Ack says whether it was applied or deferred."""
    send_control(
        server.target(ctx),
        workflow_id,
        lambda: client_inputs.switch_op(ref, op_id=op_id, reason=reason.value),
        SessionHandle.context_modify,
    )
