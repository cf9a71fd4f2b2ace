"""Parameter types shared by the commands, and typed wrappers of `typer.Option`/`typer.Argument`.

Typer's overloads mention click's generic `ParamType` without its parameter, which
pyright strict reports at every call site; wrapping them once keeps the commands
module fully checked.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer


def option(*decls: str, help: str, envvar: str | None = None, min: int | None = None) -> Any:
    """A command-line option (use inside `Annotated`)."""
    return typer.Option(*decls, help=help, envvar=envvar, min=min)  # pyright: ignore[reportUnknownMemberType]


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
OpIdOpt = Annotated[str | None, option("--op-id", help="Idempotency key (default: a new uuid).")]
ReasonOpt = Annotated[Reason, option("--reason", help="Why the context changes.")]
