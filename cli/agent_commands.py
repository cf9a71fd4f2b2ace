"""`client.py agents list|show|create|publish|set-latest`: agents made at run time, in the store.

The store is the one `REACT_STORE_URL` names (default `.temporal/store.db`), or --store-url: the
gateway's. A config is a JSON file (an `AgentConfig`), checked whole before anything is written
(an unknown field refused by name; with tools or agent profiles, the workers of --task-queue on
the Temporal server check them, as the gateway does: docs/agent-versions.md). Refusals print their
code and exit 1; nothing is written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from cli import ops
from cli.common import say, target_of
from cli.errors import reported
from cli.params import argument, option
from clients.agents import Agents
from contracts import TASK_QUEUE
from contracts.memory import LOCAL_PRINCIPAL
from store import StoreError

T = TypeVar("T")

agents_app = typer.Typer(
    help="Agents made at run time: versions, latest, roll back (docs/agent-versions.md).",
    no_args_is_help=True,
)
NameArg = Annotated[str, argument(help="The agent's name.")]
ConfigArg = Annotated[Path, argument(help="A JSON file holding the AgentConfig.")]
NoteOpt = Annotated[str | None, option(help="What changed (kept with the version).")]
ByOpt = Annotated[str, option(help="Who publishes it (a principal).")]
StoreOpt = Annotated[
    str | None, option(help="The store (default: REACT_STORE_URL, else .temporal/store.db).")
]
QueueOpt = Annotated[str, option(help="The workers that check a config's tools and agent profiles.")]


def _run(
    ctx: typer.Context, url: str | None, task_queue: str | None, call: Callable[[Agents], Awaitable[T]]
) -> T:
    """Run `call` on the store's agents (with the Temporal client of the workers' check when `task_queue`)."""
    target = target_of(ctx, None, None)

    async def opened() -> T:
        client = await ops.open_client(target.address, target.namespace) if task_queue else None
        async with Agents(url, client=client, task_queue=task_queue or "") as agents:
            return await call(agents)

    with reported(target.address):
        try:
            return asyncio.run(opened())
        except StoreError as exc:
            say(f"refused ({exc.code}): {exc.message}", "red")
            raise typer.Exit(1) from None


def _config(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        say(f"refused (invalid_input): {path}: not a JSON file ({type(exc).__name__})", "red")
        raise typer.Exit(1) from None


def _write_version(
    ctx: typer.Context,
    store_url: str | None,
    task_queue: str,
    name: str,
    config: Path,
    write: Callable[[Agents, str, Any], Awaitable[int]],
) -> None:
    """Write a version of NAME from the config file (checked against the workers when it needs them)."""
    data = _config(config)
    queue = task_queue if _needs_workers(data) else None
    version = _run(ctx, store_url, queue, lambda agents: write(agents, name, data))
    say(json.dumps({"name": name, "version": version}))


def _needs_workers(config: Any) -> bool:
    if not isinstance(config, dict):
        return False
    fields = cast(dict[str, Any], config)
    return bool(fields.get("tools") or fields.get("agents"))


@agents_app.command("list")
def list_agents(ctx: typer.Context, store_url: StoreOpt = None) -> None:
    """Print every agent made at run time with its latest version, one a line."""
    for name, latest in _run(ctx, store_url, None, lambda a: a.names()):
        say(json.dumps({"name": name, "latest": latest}))


@agents_app.command("show")
def show(ctx: typer.Context, name: NameArg, store_url: StoreOpt = None) -> None:
    """Print the agent NAME: its latest and its versions (exit 1 when there is none)."""
    record = _run(ctx, store_url, None, lambda a: a.get(name))
    if record is None:
        say(f"refused (unknown_agent): no agent named {name!r} was made at run time", "red")
        raise typer.Exit(1)
    versions = [
        {
            "version": v.version,
            "note": v.note,
            "created_by": v.created_by,
            "created_at": datetime.fromtimestamp(v.created_at, UTC).isoformat(),
        }
        for v in record.versions
    ]
    say(json.dumps({"name": record.name, "latest": record.latest, "versions": versions}))


@agents_app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    config: ConfigArg,
    note: NoteOpt = None,
    by: ByOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Make the agent NAME with the config file CONFIG as its version 1."""
    write = partial(Agents.create, created_by=by, note=note)
    _write_version(ctx, store_url, task_queue, name, config, write)


@agents_app.command("publish")
def publish(
    ctx: typer.Context,
    name: NameArg,
    config: ConfigArg,
    note: NoteOpt = None,
    by: ByOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
    task_queue: QueueOpt = TASK_QUEUE,
) -> None:
    """Publish the config file CONFIG as the next version of NAME (its new latest)."""
    write = partial(Agents.publish, created_by=by, note=note)
    _write_version(ctx, store_url, task_queue, name, config, write)


@agents_app.command("set-latest")
def set_latest(
    ctx: typer.Context,
    name: NameArg,
    version: Annotated[int, argument(help="The version asks of NAME run from now on.")],
    store_url: StoreOpt = None,
) -> None:
    """Point NAME's latest at VERSION: roll back (or forward)."""
    moved = _run(ctx, store_url, None, lambda a: a.set_latest(name, version))
    say(json.dumps({"name": name, "latest": moved}))
