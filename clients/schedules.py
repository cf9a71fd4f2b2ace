"""The typed client of schedules: an agent that acts on its own, on Temporal Schedules.

    schedules = Schedules(await connect())
    view = await schedules.create(
        owner="alice", agent_id="triage", config=AgentConfig(model="openai/gpt-4o-mini"),
        message="Triage the inbox.", cron="0 * * * *", timezone="Europe/Paris", session_id="agent-inbox",
    )
    await schedules.trigger(view.schedule_id)          # fire once now
    print((await schedules.describe(view.schedule_id)).recent_firings)

A schedule is a Temporal Schedule (`schedule/<owner>/<name>`) whose action starts a
`ScheduledAsk` workflow per firing (`contracts.schedules`): the Web UI lists both. Its
settings are its memo (`ScheduleSettings`); its firings are read back from their workflows'
memos (thread id, request id, status). Times are checked first (`clients.schedule_spec`):
a bad cron expression, time zone or interval is refused by name and nothing is created.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, TypeVar, get_args

from temporalio.api.workflowservice.v1 import (
    ListScheduleMatchingTimesRequest,
    ListScheduleMatchingTimesResponse,
)
from temporalio.client import (
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionResult,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleState,
    WorkflowExecutionStatus,
)
from temporalio.service import RPCError, RPCStatusCode

from clients.base import ClientScope
from clients.errors import RejectedError
from clients.inputs import check_webhook_url
from clients.schedule_spec import (
    BACKFILL_CEILING,
    MAX_BACKFILL_VARIABLE,
    max_backfill,
    schedule_setting,
    schedule_spec,
)
from contracts import AgentConfig
from contracts.errors import INVALID_INPUT, NOT_FOUND, QUOTA_EXCEEDED
from contracts.limits import MAX_QUERY_CHARS
from contracts.schedules import (
    FIRING_WORKFLOW_TYPE,
    MAX_RECENT_FIRINGS,
    NAME_PATTERN,
    ON_BUSY_OF_OVERLAP,
    OWNER_PATTERN,
    PREFIX,
    CalendarSpec,
    Firing,
    FiringInput,
    FiringState,
    Overlap,
    ScheduleSettings,
    ScheduleView,
    firing_workflow_id_base,
    owner_of,
)
from contracts.session import QUERY_PREVIEW_CHARS
from contracts.web_ui import first_words
from contracts.workflow_ids import workflow_id_problem

MAX_NOTE_CHARS: Final = 1_000
MAX_PER_OWNER_VARIABLE: Final = "REACT_SCHEDULE_MAX_PER_OWNER"
DEFAULT_MAX_PER_OWNER: Final = 100
SETTINGS_MEMO: Final = "schedule"

T = TypeVar("T")

__all__ = ["Schedules", "owner_of", "schedule_id_of"]


def schedule_id_of(owner: str, name: str) -> str:
    """The id of `owner`'s schedule `name`: `schedule/<owner>/<name>` (the owner lives in the id).

    Raises:
        RejectedError: `invalid_input` naming `owner` or `name` and its pattern.
    """
    if not OWNER_PATTERN.fullmatch(owner):
        raise RejectedError(INVALID_INPUT, f"owner must match {OWNER_PATTERN.pattern}")
    if not NAME_PATTERN.fullmatch(name):
        raise RejectedError(INVALID_INPUT, f"name must match {NAME_PATTERN.pattern}")
    return f"{PREFIX}/{owner}/{name}"


def max_per_owner(env: Mapping[str, str] | None = None) -> int:
    """The most schedules one owner may have (`REACT_SCHEDULE_MAX_PER_OWNER`, default 100).

    Raises:
        RejectedError: `invalid_input` when the variable is not a whole number ≥ 1.
    """
    return schedule_setting(MAX_PER_OWNER_VARIABLE, DEFAULT_MAX_PER_OWNER, env)


def _unknown(schedule_id: str) -> RejectedError:
    return RejectedError(NOT_FOUND, f"no schedule {schedule_id!r}")


class Schedules(ClientScope):
    """Creates, lists, describes, pauses, triggers, backfills and deletes schedules."""

    async def create(
        self,
        *,
        owner: str,
        agent_id: str,
        config: AgentConfig,
        message: str,
        name: str | None = None,
        cron: str | None = None,
        every_s: int | None = None,
        calendars: Sequence[CalendarSpec] = (),
        timezone: str | None = None,
        jitter_s: int | None = None,
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        paused: bool = False,
        note: str | None = None,
        session_id: str | None = None,
        fresh_session_prefix: str | None = None,
        overlap: Overlap | None = None,
        webhook_url: str | None = None,
    ) -> ScheduleView:
        """Create `owner`'s schedule asking `agent_id` (`config`) `message` at the given times.

        Args:
            owner: the principal the schedule belongs to (its id is `schedule/<owner>/<name>`).
            agent_id: the agent of the sessions it asks; `config` starts one that does not run yet.
            config: the agent's config, for a session that does not run yet.
            message: what every firing asks.
            name: the schedule's name (default: 8 random hex digits).
            cron: a five-field cron expression or an `@hourly`-style alias (`clients.schedule_spec`).
            every_s: an interval in whole seconds, at least `REACT_SCHEDULE_MIN_INTERVAL_S`.
            calendars: calendar times (give exactly one of `cron`, `every_s`, `calendars`).
            timezone: the IANA time zone the cron expression and calendars are read in (default UTC).
            jitter_s: each firing is delayed by a random 0 to `jitter_s` seconds.
            start_at: no firing before it.
            end_at: no firing after it.
            paused: create it paused, with `note`.
            note: why it is paused (or anything to say about it).
            session_id: the session every firing asks (the conversation continues); None: a
                fresh session per firing, named `fresh_session_prefix` + the firing's time
                (default prefix: `<schedule id>/`).
            fresh_session_prefix: see `session_id`.
            overlap: what a firing does when the named session is busy: `skip` (the default
                with a session: refused `busy`, the firing is `skipped`), `buffer_one`
                (enqueued), `cancel_other` (interrupts the running request); `allow_all` (the
                default, and the only choice, without a session) runs a fresh session each.
            webhook_url: where the webhooks of its firings (`schedule.fired`) and their requests go
                (checked against `REACT_WEBHOOK_ALLOW`).

        Raises:
            RejectedError: `invalid_input` naming the field (nothing is created), e.g. a cron
                expression firing more often than the smallest interval, or a name in use;
                `quota_exceeded` when `owner` has `REACT_SCHEDULE_MAX_PER_OWNER` schedules.
        """
        schedule_id = schedule_id_of(owner, name if name is not None else uuid.uuid4().hex[:8])
        spec = schedule_spec(
            cron=cron,
            every_s=every_s,
            calendars=calendars,
            timezone=timezone,
            jitter_s=jitter_s,
            start_at=start_at,
            end_at=end_at,
        )
        if not message.strip() or len(message) > MAX_QUERY_CHARS:
            raise RejectedError(INVALID_INPUT, f"message: 1 to {MAX_QUERY_CHARS} characters, not blank")
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise RejectedError(INVALID_INPUT, f"note: at most {MAX_NOTE_CHARS} characters")
        check_webhook_url(webhook_url)
        check_webhook_url(config.webhook_url, "config.webhook_url")
        if overlap is not None and overlap not in get_args(Overlap):
            raise RejectedError(INVALID_INPUT, f"overlap: one of {', '.join(get_args(Overlap))}")
        if session_id is not None:
            problem = workflow_id_problem(session_id, "session id")
            if problem is not None:
                raise RejectedError(INVALID_INPUT, f"session_id: {problem}")
            overlap = overlap or "skip"
            if overlap == "allow_all":
                raise RejectedError(
                    INVALID_INPUT, "overlap: allow_all runs a fresh session per firing; give no session_id"
                )
        elif overlap not in (None, "allow_all"):
            raise RejectedError(
                INVALID_INPUT, f"overlap: {overlap} needs a session_id (one session to be busy)"
            )
        overlap = overlap or "allow_all"
        prefix = fresh_session_prefix if fresh_session_prefix is not None else f"{schedule_id}/"
        settings = ScheduleSettings(
            owner=owner,
            agent_id=agent_id,
            message_preview=message[:QUERY_PREVIEW_CHARS],
            session_id=session_id,
            fresh_session_prefix=prefix if session_id is None else "",
            overlap=overlap,
            cron=cron.strip() if cron is not None else None,
            every_s=every_s,
            calendars=list(calendars),
            timezone=timezone,
            jitter_s=jitter_s,
            start_at=start_at,
            end_at=end_at,
            webhook_url=webhook_url,
        )
        try:
            firing = FiringInput(
                schedule_id=schedule_id,
                agent_id=agent_id,
                query=message,
                config=config,
                session_id=session_id,
                fresh_session_prefix=settings.fresh_session_prefix,
                on_busy=ON_BUSY_OF_OVERLAP[overlap],
                webhook_url=webhook_url,
            )
        except ValueError as error:
            raise RejectedError(INVALID_INPUT, str(error).splitlines()[0]) from None
        action = ScheduleActionStartWorkflow(
            FIRING_WORKFLOW_TYPE,
            firing,
            id=firing_workflow_id_base(schedule_id),
            task_queue=self._task_queue,
            execution_timeout=timedelta(minutes=10),
            static_summary=f"schedule {schedule_id}: {first_words(message, 60)}"[:200],
        )
        await self._check_room(owner)
        schedule = Schedule(
            action=action,
            spec=spec,
            # Firings are short (one ask); the session applies the overlap policy itself.
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL),
            state=ScheduleState(note=note, paused=paused),
        )
        try:
            await self._client.create_schedule(
                schedule_id, schedule, memo={SETTINGS_MEMO: settings}, rpc_timeout=self._timeouts.control
            )
        except ScheduleAlreadyRunningError:
            raise RejectedError(INVALID_INPUT, f"name: schedule {schedule_id!r} exists already") from None
        except RPCError as error:
            if error.status == RPCStatusCode.INVALID_ARGUMENT:
                raise RejectedError(
                    INVALID_INPUT, f"the server refused the schedule: {error.message}"
                ) from None
            raise
        return await self.describe(schedule_id)

    async def _check_room(self, owner: str) -> None:
        """Refuse a schedule past the owner's bound, counted in visibility.

        A schedule created a moment ago may not count yet: creates sent together can pass the
        bound by their number (the bound is on a principal's standing schedules, not a race).
        """
        bound = max_per_owner()
        held = 0
        query = f'ScheduleId STARTS_WITH "{PREFIX}/{owner}/"'
        async for listed in await self._client.list_schedules(query=query, rpc_timeout=self._timeouts.query):
            held += owner_of(listed.id) == owner
            if held >= bound:
                raise RejectedError(
                    QUOTA_EXCEEDED,
                    f"quota max_schedules_per_owner: {owner!r} has {held} schedules of {bound} "
                    f"({MAX_PER_OWNER_VARIABLE}); delete one first (nothing was created)",
                )

    async def list(self, owner: str) -> list[ScheduleView]:
        """`owner`'s schedules (without their recent firings; `describe` reads those).

        The server filters them by id, `ScheduleId STARTS_WITH "schedule/<owner>/"` (the owner
        lives in the id, and its pattern has no quote), so only the owner's are described: one
        describe each, for the count of firings, which a listing does not carry. Checked on the
        dev server (`temporal server start-dev`, Server 1.32: 20 of 40 schedules in 0.02 s); a
        search attribute would need registering on every deployment, and the memo cannot be
        queried. Visibility is eventually consistent: a schedule created a moment ago may not
        be listed yet (as without the filter).
        """
        if not OWNER_PATTERN.fullmatch(owner):
            return []
        query = f'ScheduleId STARTS_WITH "{PREFIX}/{owner}/"'
        views: list[ScheduleView] = []
        async for listed in await self._client.list_schedules(query=query, rpc_timeout=self._timeouts.query):
            if owner_of(listed.id) != owner:
                continue
            try:
                views.append(await self.describe(listed.id, firings=False))
            except RejectedError:
                continue  # deleted meanwhile
        return sorted(views, key=lambda v: v.schedule_id)

    async def describe(self, schedule_id: str, *, firings: bool = True) -> ScheduleView:
        """The schedule: its settings, state, next firing times and recent firings (thread and request each).

        Raises:
            RejectedError: `not_found` when no schedule has that id.
        """
        described = await self._call(schedule_id, lambda h: h.describe(rpc_timeout=self._timeouts.query))
        settings = await described.memo_value(SETTINGS_MEMO, None, type_hint=ScheduleSettings)
        if settings is None:  # a Temporal Schedule this client did not create
            raise _unknown(schedule_id)
        recent: Sequence[ScheduleActionResult] = (
            described.info.recent_actions[-MAX_RECENT_FIRINGS:] if firings else ()
        )
        return ScheduleView(
            **settings.model_dump(),
            schedule_id=schedule_id,
            paused=described.schedule.state.paused,
            note=described.schedule.state.note,
            firings=described.info.num_actions,
            next_firings=list(described.info.next_action_times[:5]),
            recent_firings=list(await asyncio.gather(*(self._firing(a) for a in recent))),
        )

    async def pause(self, schedule_id: str, note: str | None = None) -> ScheduleView:
        """Stop firing until `unpause` (a firing in flight finishes); `note` says why."""
        await self._call(schedule_id, lambda h: h.pause(note=self._note(note, "paused")))
        return await self.describe(schedule_id, firings=False)

    async def unpause(self, schedule_id: str, note: str | None = None) -> ScheduleView:
        """Fire again from the next scheduled time on."""
        await self._call(schedule_id, lambda h: h.unpause(note=self._note(note, "unpaused")))
        return await self.describe(schedule_id, firings=False)

    async def trigger(self, schedule_id: str) -> None:
        """Fire once now (also while paused), with the schedule's own overlap policy."""
        await self._call(schedule_id, lambda h: h.trigger(overlap=ScheduleOverlapPolicy.ALLOW_ALL))

    async def backfill(self, schedule_id: str, start_at: datetime, end_at: datetime) -> None:
        """Fire now once for every time the schedule matches in the past range (`start_at` exclusive).

        At most `REACT_SCHEDULE_MAX_BACKFILL` firings (default 100): the schedule's matching times
        in the range are listed first (by Temporal, from the schedule's own spec), and a range with
        more is refused whole, nothing fired.

        Raises:
            RejectedError: `invalid_input` for a range that is not in the past, or without UTC
                offsets, or that matches more firings than the bound (naming it).
        """
        if start_at.tzinfo is None or end_at.tzinfo is None:
            raise RejectedError(INVALID_INPUT, "start_at, end_at: times with their UTC offset")
        if end_at <= start_at:
            raise RejectedError(INVALID_INPUT, "end_at: must be after start_at")
        bound = max_backfill()
        firings = await self._call(schedule_id, lambda _: self._matching_times(schedule_id, start_at, end_at))
        if firings > bound:
            matched = str(firings) if firings <= BACKFILL_CEILING else f"over {BACKFILL_CEILING}"
            raise RejectedError(
                INVALID_INPUT,
                f"start_at, end_at: the range matches {matched} firings; a backfill makes at most "
                f"{bound} ({MAX_BACKFILL_VARIABLE}): backfill a shorter range (nothing was fired)",
            )
        backfill = ScheduleBackfill(start_at=start_at, end_at=end_at, overlap=ScheduleOverlapPolicy.ALLOW_ALL)
        await self._call(schedule_id, lambda h: h.backfill(backfill))

    async def _matching_times(self, schedule_id: str, start_at: datetime, end_at: datetime) -> int:
        """How many times the schedule matches in the range (Temporal lists at most 1,000)."""
        request = ListScheduleMatchingTimesRequest(namespace=self._client.namespace, schedule_id=schedule_id)
        request.start_time.FromDatetime(start_at.astimezone(UTC))
        request.end_time.FromDatetime(end_at.astimezone(UTC))
        service = self._client.workflow_service
        listed: ListScheduleMatchingTimesResponse = await service.list_schedule_matching_times(
            request, timeout=self._timeouts.query
        )
        return len(listed.start_time)

    async def delete(self, schedule_id: str) -> None:
        """Delete the schedule (firings already started finish; sessions stay)."""
        await self._call(schedule_id, lambda h: h.delete())

    # ---- internals ------------------------------------------------------------------------

    @staticmethod
    def _note(note: str | None, default: str) -> str:
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise RejectedError(INVALID_INPUT, f"note: at most {MAX_NOTE_CHARS} characters")
        return note or default

    async def _call(self, schedule_id: str, call: Callable[[ScheduleHandle], Awaitable[T]]) -> T:
        if owner_of(schedule_id) is None:
            raise _unknown(schedule_id)
        try:
            return await call(self._client.get_schedule_handle(schedule_id))
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise _unknown(schedule_id) from None
            if error.status == RPCStatusCode.INVALID_ARGUMENT:
                raise RejectedError(INVALID_INPUT, error.message) from None
            raise

    async def _firing(self, action: ScheduleActionResult) -> Firing:
        execution = action.action
        assert isinstance(execution, ScheduleActionExecutionStartWorkflow)
        firing = Firing(
            scheduled_at=action.scheduled_at,
            started_at=action.started_at,
            firing_id=execution.workflow_id,
            status="running",
        )
        handle = self._client.get_workflow_handle(
            execution.workflow_id, run_id=execution.first_execution_run_id
        )
        try:
            described = await handle.describe(rpc_timeout=self._timeouts.query)
            memo = await described.memo()
        except RPCError:
            return firing  # gone (past retention)
        state: FiringState = "running"
        if described.status == WorkflowExecutionStatus.COMPLETED:
            status = memo.get("status")
            state = status if status in ("asked", "skipped", "refused") else "failed"
        elif described.status != WorkflowExecutionStatus.RUNNING:
            state = "failed"
        thread, request = memo.get("thread_id"), memo.get("request_id")
        return firing.model_copy(
            update={
                "status": state,
                "thread_id": thread if isinstance(thread, str) else None,
                "request_id": request if isinstance(request, str) else None,
            }
        )
