"""What the run and session commands share: the server target, the console, the follow header.

Kept apart from the command modules so `cli.commands` and `cli.session_commands`
(and the chat loop) use one definition without importing each other's privates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import typer
from rich.console import Console

from cli import render
from hosting.connection import temporal_address, temporal_namespace

DEFAULT_UI_URL = "http://localhost:8233"

out = Console(highlight=False)


@dataclass(frozen=True)
class Target:
    """Where the Temporal server is: set globally, overridable per command."""

    address: str
    namespace: str


def target_of(ctx: typer.Context, address: str | None, namespace: str | None) -> Target:
    """The global target (from the app callback), with this command's overrides applied."""
    base = ctx.find_object(Target) or Target(temporal_address(), temporal_namespace())
    return Target(address or base.address, namespace or base.namespace)


def say(text: str, style: str = "") -> None:
    """Print one line of plain text (never console markup: it may hold user or model content)."""
    out.print(text, style=style, markup=False, soft_wrap=True)


def say_lines(lines: list[str], bold_first: int = 0) -> None:
    """Print lines, the first `bold_first` of them in bold."""
    for index, line in enumerate(lines):
        say(line, "bold" if index < bold_first else "")


def announce(target: Target, label: str, workflow_id: str, detail: str) -> None:
    """The header of a followed run: its workflow id, its Web UI page, what is being followed."""
    base = os.environ.get("TEMPORAL_UI_URL")
    link = render.ui_link(base or DEFAULT_UI_URL, target.namespace, workflow_id)
    say(f"{label}: {workflow_id}", "bold")
    hint = "" if base else "  (dev server UI; with docker compose use port 8080 or set TEMPORAL_UI_URL)"
    say(f"Web UI: {link}{hint}")
    say(f"{detail}; following the trace (Ctrl-C stops following, not the run)", "dim")
