"""The session commands: ask, await, status, history, export and chat (on the app of `cli.commands`).

A session is an `AgentSession` workflow: one conversation that outlives its runs.
Its id is the workflow id, given as the first argument or with --session, or
derived from a conversation id with --conversation (`agent-<id>`; `cli.session_args`).
The commands that only read a session are in `cli.session_inspect_commands`; all are
registered here, in the order `--help` lists them.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated

import typer

from cli import inputs, ops, render_session, session_ops
from cli.chat import Chat
from cli.commands import app
from cli.common import Target, announce, out, say, say_lines, target_of
from cli.demo import DEMO_QUERY
from cli.errors import CliError, err_console, reported
from cli.fork_commands import fork, reset
from cli.output_schema import OutputSchemaOpt, asking_for, load_output_schema, print_run_output
from cli.params import (
    AddressOpt,
    AgentIdOpt,
    ApiBaseOpt,
    ApprovalOpt,
    ConversationOpt,
    ExpectedLastOpt,
    IterationsOpt,
    JsonOpt,
    ModelOpt,
    NamespaceOpt,
    NoStreamOpt,
    OnBusy,
    OnBusyOpt,
    PromptOpt,
    ScriptOpt,
    SessionArg,
    SessionOpt,
    SnapshotOpt,
    ToolOpt,
    argument,
    option,
)
from cli.session_args import resume_hint, session_and_argument, session_id_of
from cli.session_inspect_commands import export, history, status
from clients import inputs as client_inputs
from clients.sessions import session_workflow_id
from contracts.output import OutputSpec

DEFAULT_AGENT_ID = "default"


def ask(
    ctx: typer.Context,
    session_id: SessionArg = None,
    query: Annotated[
        str | None, argument(help="The user's question (optional for a new demo session).")
    ] = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    tool: ToolOpt = None,
    require_approval: ApprovalOpt = None,
    system_prompt: PromptOpt = None,
    max_iterations: IterationsOpt = None,
    script: ScriptOpt = None,
    agent_id: AgentIdOpt = DEFAULT_AGENT_ID,
    snapshot: SnapshotOpt = None,
    request_id: Annotated[str | None, option(help="Request id (default: chosen by the session).")] = None,
    no_follow: Annotated[bool, option("--no-follow", help="Print the request id and exit.")] = False,
    no_stream: NoStreamOpt = False,
    on_busy: OnBusyOpt = OnBusy.reject,
    expected_last_request: ExpectedLastOpt = None,
    output_schema: OutputSchemaOpt = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Ask a session QUERY and follow its run live (the LLM's text as it comes); the first ask creates it.

    A new session gets the agent of the options (model: --model, else $REACT_MODEL,
    else the bundled local model's demo agent, where QUERY may be omitted); a running session keeps its
    agent and applies the options to this request only. A busy session rejects the
    ask (`rejected: busy (...)`, exit 1) unless --on-busy says otherwise: enqueue it,
    steer the running request with it, interrupt the running request (or roll it back)
    and run it. --expected-last-request refuses it (`stale`) if another request was
    asked since that one. The agent streams (--no-stream: the trace query is polled
    instead). --output-schema: this request's answer must match that JSON Schema (see
    `run`); its parsed output is printed as JSON. Exits 1 unless the request completes.
    """
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, query = session_and_argument(session, conversation, session_id, query, "the QUERY")
    with reported(target.address, sid, resume_hint(sid)):
        flags = inputs.AgentFlags(
            model,
            tuple(tool or ()),
            system_prompt,
            max_iterations,
            script,
            api_base,
            not no_stream,
            tuple(require_approval or ()),
        )
        if query is not None:  # limits, before connecting
            client_inputs.ask_input(
                query,
                request_id=request_id,
                on_busy=on_busy.value,
                expected_last_request=expected_last_request,
            )
        ask = session_ops.AskChoice(request_id, on_busy.value, expected_last_request)
        output = load_output_schema(output_schema)
        ok = asyncio.run(_ask(target, sid, query, flags, agent_id, snapshot, ask, not no_follow, output))
    if not ok:
        raise typer.Exit(1)


async def _ask(
    target: Target,
    session_id: str,
    query: str | None,
    flags: inputs.AgentFlags,
    agent_id: str,
    snapshot: str | None,
    choice: session_ops.AskChoice,
    follow: bool,
    output: OutputSpec | None = None,
) -> bool:
    asker, demo = await session_ops.open_asker(
        target.address, target.namespace, session_id, flags, agent_id, snapshot, choice.on_busy
    )
    asker = asking_for(asker, output)
    query = query or (DEMO_QUERY if demo else None)
    if not query:
        raise CliError("a QUERY is required (only a new session on the default demo agent has one)")
    accepted = await asker.ask(query, choice.request_id, choice.expected_last_request)
    disposition = render_session.accepted_line(accepted)
    if not follow:
        if disposition is not None:
            err_console.print(disposition, markup=False, soft_wrap=True)
        typer.echo(accepted.request_id)
        err_console.print(f"run workflow id: {accepted.run_workflow_id}", markup=False, style="dim")
        return True
    say(f"request id: {accepted.request_id}", "bold")
    if disposition is not None:
        say(disposition, "bold")
    announce(target, "run workflow id", accepted.run_workflow_id, f"session {session_id}")
    record = await session_ops.follow_request(asker, accepted, out, target.address)
    say_lines(render_session.record_lines(record), bold_first=2)
    if output is not None and record.status == "completed":
        await print_run_output(asker.client, accepted.run_workflow_id)
    return record.status == "completed"


def await_request(
    ctx: typer.Context,
    session_id: SessionArg = None,
    request_id: Annotated[str | None, argument(help="The request to wait for.")] = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    as_json: JsonOpt = False,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Wait until a session's request REQUEST_ID has finished and print its record.

    Works for any of the last 100 requests. Exits 1 unless the request completed.
    """
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        sid, request = session_and_argument(session, conversation, session_id, request_id, "the REQUEST_ID")

    async def wait() -> bool:
        if request is None:
            raise CliError("a REQUEST_ID is required (`ask` prints it; `history --requests` lists them)")
        client = await ops.open_client(target.address, target.namespace)
        record = await ops.sessions_of(client).get(sid).await_result(request)
        if as_json:
            typer.echo(record.model_dump_json(indent=2))
        else:
            say_lines(render_session.record_lines(record, verbose=True), bold_first=1)
        return record.status == "completed"

    with reported(target.address, sid, resume_hint(sid)):
        ok = asyncio.run(wait())
    if not ok:
        raise typer.Exit(1)


def chat(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, argument(help="The session's workflow id (default: a new one).")
    ] = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    tool: ToolOpt = None,
    require_approval: ApprovalOpt = None,
    system_prompt: PromptOpt = None,
    max_iterations: IterationsOpt = None,
    script: ScriptOpt = None,
    agent_id: AgentIdOpt = DEFAULT_AGENT_ID,
    snapshot: SnapshotOpt = None,
    no_stream: NoStreamOpt = False,
    on_busy: OnBusyOpt = OnBusy.reject,
    expected_last_request: ExpectedLastOpt = None,
    address: AddressOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Chat with a session: each line is an ask, its run streams live, then the answer.

    While a run streams, a typed line steers it (the same as /steer TEXT). Commands:
    /steer TEXT, /interrupt TEXT, /inject TEXT, /cancel, /context replace TEXT, /context switch LANE,
    /export, /status, /history [SINCE], /requests, /help, /quit (or Ctrl-D; a running
    request goes on). A tool call awaiting approval (--require-approval TOOL, or a tool
    the worker marks) is asked about inline: y approves, n denies (with an optional
    reason), e approves with edited JSON arguments; the approver is your user name.
    Between turns steer and inject are rejected (`idle`). The
    options configure a new session, or override each request of a running one;
    --on-busy applies to each ask, and with --expected-last-request each ask expects
    the chat's previous request to be the last one (the first expects the one given).
    """
    target = target_of(ctx, address, namespace)
    with reported(target.address):
        if session_id is not None and (session is not None or conversation is not None):
            raise CliError(f"unexpected argument {session_id!r}: the session is given by an option")
        sid = session_id_of(session, conversation, session_id) or session_workflow_id(uuid.uuid4().hex[:8])
    with reported(target.address, sid, resume_hint(sid)):
        flags = inputs.AgentFlags(
            model,
            tuple(tool or ()),
            system_prompt,
            max_iterations,
            script,
            api_base,
            not no_stream,
            tuple(require_approval or ()),
        )

        async def talk() -> None:
            asker, _ = await session_ops.open_asker(
                target.address, target.namespace, sid, flags, agent_id, snapshot, on_busy.value
            )
            await Chat(asker, target, expected_last_request).run()

        asyncio.run(talk())


app.command()(ask)
app.command("await")(await_request)
app.command()(status)
app.command()(history)
app.command()(export)
app.command()(fork)
app.command()(reset)
app.command()(chat)
