"""The session commands: ask, await, status, history, export, case, chat... (on the app of `cli.commands`).

A session is an `AgentSession` workflow: one conversation that outlives its runs.
Its id is the workflow id, given as the first argument or with --session, or
derived from a conversation id with --conversation (`agent-<id>`; `cli.session_args`).
The commands that only read a session are in `cli.session_inspect_commands`; all are
registered here, in the order `--help` lists them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from cli import render_session, session_ops
from cli.agent_commands import agents_app
from cli.branch_commands import branches, edit, regenerate
from cli.chat import Chat
from cli.commands import app
from cli.common import Target, announce, out, say, say_lines
from cli.demo import DEMO_QUERY
from cli.errors import CliError, err_console, reported
from cli.eval_commands import eval_app
from cli.fork_commands import delete, fork, reset
from cli.handle_calls import on_handle, which_session
from cli.memory_commands import memory_app
from cli.option_groups import AskRules, ServerOptions, SessionOptions, SessionRef, with_groups
from cli.output_schema import OutputSchemaOpt, load_output_schema, print_run_output
from cli.params import (
    ConversationOpt,
    JsonOpt,
    SessionOpt,
    argument,
    option,
)
from cli.schedule_commands import schedule_app
from cli.session_args import resume_hint, session_id_of
from cli.session_inspect_commands import case, export, history, status
from cli.usage_commands import usage
from cli.webhook_commands import webhook
from clients import session_ask
from clients.inputs import new_id
from clients.output import output_override
from clients.session_attachments import resolve_attachments
from clients.sessions import session_workflow_id
from contracts.session import AskInput
from payloads.blob_store import blob_store_from_env


def ask(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    query: Annotated[
        str | None, argument(help="The user's question (optional for a new demo session).")
    ] = None,
    options: SessionOptions,
    request_id: Annotated[str | None, option(help="Request id (default: chosen by the session).")] = None,
    no_follow: Annotated[bool, option("--no-follow", help="Print the request id and exit.")] = False,
    webhook_url: Annotated[
        str | None, option(help="Where this request's signed webhooks go (over the session's default).")
    ] = None,
    rules: AskRules,
    output_schema: OutputSchemaOpt = None,
    attach: Annotated[
        list[Path] | None, option("--attach", help="A file the message carries (repeatable).")
    ] = None,
    server: ServerOptions,
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
    `run`); its parsed output is printed as JSON. --webhook-url: this request's webhook;
    --session-webhook-url: a new session's default (`webhook` changes it later). --attach FILE
    (repeatable): files the message carries, stored in the payload store first under the
    deployment's attachment limits (docs/attachments.md). Exits 1 unless the request completes.
    """
    target = server.target(ctx)
    sid, query = which_session(target, ref, query, "the QUERY")
    with reported(target.address, sid, resume_hint(sid)):
        output = load_output_schema(output_schema)

        def ask_of(text: str) -> AskInput:
            return session_ask.ask_input(
                text,
                request_id=request_id,
                overrides=output_override(output) if output is not None else {},
                on_busy=rules.on_busy,
                expected_last_request=rules.expected_last_request,
                webhook_url=webhook_url,
            )

        built = None if query is None else ask_of(query)  # limits, before connecting
        ok = asyncio.run(_ask(target, sid, options, rules, built or ask_of, not no_follow, attach or []))
    if not ok:
        raise typer.Exit(1)


async def _ask(
    target: Target,
    session_id: str,
    options: SessionOptions,
    rules: AskRules,
    ask: AskInput | Callable[[str], AskInput],
    follow: bool,
    attach: list[Path],
) -> bool:
    """Ask (`ask`, or the demo's query made by it when the session is new on the demo agent) and follow."""
    asker, demo = await session_ops.open_asker(target, session_id, options, stream=not rules.no_stream)
    if not isinstance(ask, AskInput):
        if not demo:
            raise CliError("a QUERY is required (only a new session on the default demo agent has one)")
        ask = ask(DEMO_QUERY)
    if attach:
        refs = await resolve_attachments(
            attach, blob_store_from_env(), session_id=session_id, request_id=ask.request_id or new_id()
        )
        ask = AskInput.model_validate({**ask.model_dump(), "attachments": [r.model_dump() for r in refs]})
    accepted = await asker.ask(ask)
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
    if "output" in ask.overrides and record.status == "completed":  # --output-schema (`output_override`)
        await print_run_output(asker.client, accepted.run_workflow_id)
    return record.status == "completed"


def await_request(
    ctx: typer.Context,
    *,
    ref: SessionRef,
    request_id: Annotated[str | None, argument(help="The request to wait for.")] = None,
    as_json: JsonOpt = False,
    server: ServerOptions,
) -> None:
    """Wait until a session's request REQUEST_ID has finished and print its record.

    Works for any of the last 100 requests. Exits 1 unless the request completed.
    """
    target = server.target(ctx)
    sid, request = which_session(target, ref, request_id, "the REQUEST_ID")
    if request is None:
        with reported(target.address, sid):
            raise CliError("a REQUEST_ID is required (`ask` prints it; `history --requests` lists them)")
    wanted = request
    record = on_handle(target, sid, lambda handle: handle.await_result(wanted), resume_hint(sid))
    if as_json:
        typer.echo(record.model_dump_json(indent=2))
    else:
        say_lines(render_session.record_lines(record, verbose=True), bold_first=1)
    if record.status != "completed":
        raise typer.Exit(1)


def chat(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, argument(help="The session's workflow id (default: a new one).")
    ] = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    *,
    options: SessionOptions,
    rules: AskRules,
    server: ServerOptions,
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
    target = server.target(ctx)
    with reported(target.address):
        if session_id is not None and (session is not None or conversation is not None):
            raise CliError(f"unexpected argument {session_id!r}: the session is given by an option")
        sid = session_id_of(session, conversation, session_id)
        sid = sid or session_workflow_id(uuid.uuid4().hex[:8])

    async def talk() -> None:
        asker, _ = await session_ops.open_asker(target, sid, options, stream=not rules.no_stream)
        await Chat(asker, target, rules.on_busy, rules.expected_last_request).run()

    with reported(target.address, sid, resume_hint(sid)):
        asyncio.run(talk())


app.command()(with_groups(ask))
app.command("await")(with_groups(await_request))
for command in (status, history, export, case, fork, regenerate, edit, branches, reset, delete, webhook):
    app.command()(with_groups(command))
for command in (chat,):
    app.command()(with_groups(command))
app.add_typer(schedule_app, name="schedule")
app.add_typer(memory_app, name="memory")
app.add_typer(agents_app, name="agents")
app.command("usage")(usage)
app.add_typer(eval_app, name="eval")
