"""`client.py schedule create|list|show|pause|unpause|trigger|backfill|delete`: agents that act on their own.

A schedule (`clients.schedules.Schedules`) is a Temporal Schedule asking an agent a message
at its times, in a named session (--session / --conversation: the conversation continues)
or in a fresh session per firing. SCHEDULE is a schedule's id (`schedule/<owner>/<name>`) or
its name among --owner's (default `local`, the gateway's principal without tokens). Every
check of the times (a bad cron expression, time zone or interval) is made before anything is
created, and refused by name (exit 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, TypeVar

import typer

from cli import inputs, ops
from cli.common import say, say_lines
from cli.errors import CliError, reported
from cli.option_groups import AgentOptions, ServerOptions, with_groups
from cli.params import AgentIdOpt, ConversationOpt, JsonOpt, SessionOpt, argument, option
from clients.schedules import Schedules, schedule_id_of
from clients.sessions import DEFAULT_AGENT_ID, session_workflow_id
from contracts.schedules import Firing, Overlap, ScheduleView

T = TypeVar("T")
DEFAULT_OWNER = "local"

schedule_app = typer.Typer(
    help="Schedules: ask an agent at set times (cron, interval), on Temporal Schedules.", no_args_is_help=True
)

ScheduleArg = Annotated[
    str, argument(help="The schedule: its id (schedule/<owner>/<name>) or a name of --owner's.")
]
OwnerOpt = Annotated[str, option(help="The schedules' owner (a principal).")]
NoteOpt = Annotated[str | None, option(help="Why (shown with the schedule).")]
OVERLAPS: tuple[Overlap, ...] = ("skip", "buffer_one", "cancel_other", "allow_all")


def _schedule_id(schedule: str, owner: str) -> str:
    return schedule if schedule.startswith("schedule/") else schedule_id_of(owner, schedule)


def _on_schedules(server: ServerOptions, ctx: typer.Context, call: Callable[[Schedules], Awaitable[T]]) -> T:
    target = server.target(ctx)

    async def connected() -> T:
        client = await ops.open_client(target.address, target.namespace)
        return await call(Schedules(client, timeouts=ops.TIMEOUTS))

    with reported(target.address):
        return asyncio.run(connected())


def utc(moment: datetime) -> datetime:
    """A time the user typed: UTC unless it carries an offset."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _firing_line(firing: Firing) -> str:
    where = f" thread {firing.thread_id}" if firing.thread_id else ""
    request = f" request {firing.request_id}" if firing.request_id else ""
    return f"  {firing.scheduled_at.isoformat()} {firing.status}{where}{request}"


def _lines(view: ScheduleView) -> list[str]:
    when = view.cron or (f"every {view.every_s} s" if view.every_s else f"{len(view.calendars)} calendar(s)")
    tz = f" ({view.timezone})" if view.timezone else ""
    state = f"paused: {view.note}" if view.paused else "active"
    where = (
        f"session {view.session_id}"
        if view.session_id
        else f"a fresh session per firing ({view.fresh_session_prefix}…)"
    )
    lines = [
        f"schedule {view.schedule_id} · {state}",
        f"{when}{tz} · agent {view.agent_id} · {where} · overlap {view.overlap}",
        f"message: {view.message_preview}",
        f"firings: {view.firings}",
    ]
    lines += [f"next: {t.isoformat()}" for t in view.next_firings[:3]]
    if view.recent_firings:
        lines.append("recent firings:")
        lines += [_firing_line(f) for f in view.recent_firings]
    return lines


def _print(view: ScheduleView, as_json: bool) -> None:
    if as_json:
        typer.echo(view.model_dump_json(indent=2))
    else:
        say_lines(_lines(view), bold_first=1)


def create(
    ctx: typer.Context,
    *,
    message: Annotated[str, argument(help="What every firing asks.")],
    name: Annotated[str | None, option(help="The schedule's name (default: 8 random hex digits).")] = None,
    owner: OwnerOpt = DEFAULT_OWNER,
    cron: Annotated[str | None, option(help="A cron expression (5 fields, or @hourly, @daily...).")] = None,
    every: Annotated[int | None, option("--every", help="An interval in seconds.", min=1)] = None,
    timezone: Annotated[str | None, option(help="The IANA time zone of --cron (default UTC).")] = None,
    jitter: Annotated[int | None, option(help="Delay each firing by a random 0..N seconds.", min=0)] = None,
    start_at: Annotated[
        datetime | None, option(help="No firing before this time (UTC unless an offset).")
    ] = None,
    end_at: Annotated[
        datetime | None, option(help="No firing after this time (UTC unless an offset).")
    ] = None,
    paused: Annotated[bool, option("--paused", help="Create it paused.")] = False,
    note: NoteOpt = None,
    session: SessionOpt = None,
    conversation: ConversationOpt = None,
    overlap: Annotated[
        str | None,
        option(
            help="When the session is busy: skip, buffer_one, cancel_other (allow_all: fresh sessions).",
            choices=OVERLAPS,
        ),
    ] = None,
    webhook_url: Annotated[str | None, option(help="Where the webhooks of its requests go.")] = None,
    agent: AgentOptions,
    agent_id: AgentIdOpt = DEFAULT_AGENT_ID,
    as_json: JsonOpt = False,
    server: ServerOptions,
) -> None:
    """Create a schedule asking MESSAGE at its times (--cron or --every), in a session or fresh ones.

    With --session (or --conversation) every firing asks that session (created by the first
    firing with the agent options); --overlap says what a firing does while it is busy
    (default skip). Without, each firing starts a fresh session. The smallest interval is
    $REACT_SCHEDULE_MIN_INTERVAL_S (default 60 s).
    """
    if session is not None and conversation is not None:
        with reported(server.target(ctx).address):
            raise CliError("give --session or --conversation, not both")
    session_id = session or (session_workflow_id(conversation) if conversation is not None else None)
    with reported(server.target(ctx).address):
        config, _ = inputs.resolve_config(agent.flags(stream=False))

    view = _on_schedules(
        server,
        ctx,
        lambda schedules: schedules.create(
            owner=owner,
            agent_id=agent_id,
            config=config,
            message=message,
            name=name,
            cron=cron,
            every_s=every,
            timezone=timezone,
            jitter_s=jitter,
            start_at=utc(start_at) if start_at else None,
            end_at=utc(end_at) if end_at else None,
            paused=paused,
            note=note,
            session_id=session_id,
            overlap=overlap,  # pyright: ignore[reportArgumentType]  # one of OVERLAPS (click checked it)
            webhook_url=webhook_url,
        ),
    )
    if not as_json:
        say(f"created {view.schedule_id}", "bold")
    _print(view, as_json)


def list_schedules(
    ctx: typer.Context, *, owner: OwnerOpt = DEFAULT_OWNER, as_json: JsonOpt = False, server: ServerOptions
) -> None:
    """List --owner's schedules."""
    views = _on_schedules(server, ctx, lambda schedules: schedules.list(owner))
    if as_json:
        typer.echo("[" + ",".join(v.model_dump_json() for v in views) + "]")
        return
    if not views:
        say(f"no schedules of {owner}")
    for view in views:
        when = view.cron or f"every {view.every_s} s"
        state = "paused" if view.paused else "active"
        say(f"{view.schedule_id}  {state}  {when}  {view.firings} firings  {view.message_preview[:60]}")


def show(
    ctx: typer.Context,
    *,
    schedule: ScheduleArg,
    owner: OwnerOpt = DEFAULT_OWNER,
    as_json: JsonOpt = False,
    server: ServerOptions,
) -> None:
    """Show a schedule: its times, state, next firings and recent firings (each one's thread and request)."""
    _print(_on_schedules(server, ctx, lambda s: s.describe(_schedule_id(schedule, owner))), as_json)


def pause(
    ctx: typer.Context,
    *,
    schedule: ScheduleArg,
    note: NoteOpt = None,
    owner: OwnerOpt = DEFAULT_OWNER,
    server: ServerOptions,
) -> None:
    """Pause a schedule (a firing in flight finishes); --note says why."""
    view = _on_schedules(server, ctx, lambda s: s.pause(_schedule_id(schedule, owner), note))
    say(f"paused {view.schedule_id}: {view.note}")


def unpause(
    ctx: typer.Context,
    *,
    schedule: ScheduleArg,
    note: NoteOpt = None,
    owner: OwnerOpt = DEFAULT_OWNER,
    server: ServerOptions,
) -> None:
    """Unpause a schedule: it fires again from its next time on."""
    view = _on_schedules(server, ctx, lambda s: s.unpause(_schedule_id(schedule, owner), note))
    say(f"unpaused {view.schedule_id}")


def trigger(
    ctx: typer.Context, *, schedule: ScheduleArg, owner: OwnerOpt = DEFAULT_OWNER, server: ServerOptions
) -> None:
    """Fire a schedule once now (also while paused)."""
    schedule_id = _schedule_id(schedule, owner)
    _on_schedules(server, ctx, lambda s: s.trigger(schedule_id))
    say(f"triggered {schedule_id}")


def backfill(
    ctx: typer.Context,
    *,
    schedule: ScheduleArg,
    start: Annotated[datetime, option(help="From this time (exclusive; UTC unless an offset).")],
    end: Annotated[datetime, option(help="To this time (UTC unless an offset).")],
    owner: OwnerOpt = DEFAULT_OWNER,
    server: ServerOptions,
) -> None:
    """Fire once now for every time the schedule matched between --start and --end."""
    schedule_id = _schedule_id(schedule, owner)
    first, last = utc(start), utc(end)
    _on_schedules(server, ctx, lambda s: s.backfill(schedule_id, first, last))
    say(f"backfilled {schedule_id} from {first.isoformat()} to {last.isoformat()}")


def delete(
    ctx: typer.Context, *, schedule: ScheduleArg, owner: OwnerOpt = DEFAULT_OWNER, server: ServerOptions
) -> None:
    """Delete a schedule (firings in flight finish; its sessions stay)."""
    schedule_id = _schedule_id(schedule, owner)
    _on_schedules(server, ctx, lambda s: s.delete(schedule_id))
    say(f"deleted {schedule_id}")


schedule_app.command("create")(with_groups(create))
schedule_app.command("list")(with_groups(list_schedules))
schedule_app.command("show")(with_groups(show))
schedule_app.command("pause")(with_groups(pause))
schedule_app.command("unpause")(with_groups(unpause))
schedule_app.command("trigger")(with_groups(trigger))
schedule_app.command("backfill")(with_groups(backfill))
schedule_app.command("delete")(with_groups(delete))
