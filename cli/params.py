"""Parameter types shared by the commands, and typed wrappers of `typer.Option`/`typer.Argument`.

Typer's overloads mention click's generic `ParamType` without its parameter, which
pyright strict reports at every call site; wrapping them once keeps the commands
module fully checked.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, get_args

import click
import typer

from contracts.session import OnBusy


def option(
    *decls: str,
    help: str,
    envvar: str | None = None,
    min: int | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A command-line option (use inside `Annotated`); `choices`: the values a `Literal` option takes."""
    click_type = None if choices is None else click.Choice(choices)
    return typer.Option(*decls, help=help, envvar=envvar, min=min, click_type=click_type)  # pyright: ignore[reportUnknownMemberType]


def argument(help: str) -> Any:
    """A positional argument (use inside `Annotated`)."""
    return typer.Argument(help=help)  # pyright: ignore[reportUnknownMemberType]


class View(StrEnum):
    """What `show` displays, one per workflow query."""

    state = "state"
    thread = "thread"
    context = "context"
    trace = "trace"


class Reason(StrEnum):
    """Why a context operation is made (recorded in the thread)."""

    manual = "manual"
    restore = "restore"
    compaction = "compaction"
    system = "system"


AddressOpt = Annotated[str | None, option("--address", help="Temporal address (overrides the global one).")]
NamespaceOpt = Annotated[str | None, option("--namespace", help="Namespace (overrides the global one).")]
WorkflowId = Annotated[str, argument(help="The run's workflow id.")]
ControlId = Annotated[str, argument(help="Workflow id of a run, or of a session (for its active run).")]
OpIdOpt = Annotated[str | None, option("--op-id", help="Idempotency key (default: a new uuid).")]
ReasonOpt = Annotated[Reason, option("--reason", help="Why the context changes.")]

# Sessions, and the agent options of `ask` and `chat`.
SessionArg = Annotated[str | None, argument(help="The session's workflow id (or --session/--conversation).")]
SessionOpt = Annotated[str | None, option("--session", help="The session's workflow id.")]
ConversationOpt = Annotated[str | None, option(help="A conversation id: the session is agent-<id>.")]
JsonOpt = Annotated[bool, option("--json", help="Raw JSON instead of tables.")]
ModelOpt = Annotated[
    str | None, option(help="litellm model string (default: $REACT_MODEL, else the bundled local model).")
]
ApiBaseOpt = Annotated[
    str | None,
    option(help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (default: $REACT_API_BASE)."),
]
ToolOpt = Annotated[list[str] | None, option(help="A tool the agent may call (repeatable).")]
ApprovalOpt = Annotated[
    list[str] | None,
    option("--require-approval", help="A tool whose calls wait for a person's approval (repeatable)."),
]
PromptOpt = Annotated[str | None, option(help="System prompt of the agent.")]
IterationsOpt = Annotated[int | None, option(min=1, help="LLM turns before giving up.")]
ScriptOpt = Annotated[Path | None, option(help="JSON list of script turns (scripted model).")]
AgentIdOpt = Annotated[str, option(help="Agent id of a new session.")]
SnapshotOpt = Annotated[str | None, option(help="Snapshot token a new session starts from.")]
SessionWebhookOpt = Annotated[
    str | None,
    option(help="A new session's default webhook: where its requests call back when they name none."),
]
OnBusyOpt = Annotated[
    OnBusy,
    option(
        "--on-busy",
        help="When another request runs: reject (busy), enqueue, steer it, interrupt it, or rollback.",
        choices=get_args(OnBusy),
    ),
]
ExpectedLastOpt = Annotated[
    str | None,
    option(help="Refuse the ask (stale) unless this request is the session's last one."),
]
NoStreamOpt = Annotated[
    bool,
    option("--no-stream", help="Do not stream the LLM's text; follow the trace by polling its query."),
]
