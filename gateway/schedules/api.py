"""Schedules over HTTP, on the typed client's `Schedules` (owners live in the schedule's id).

    POST   /api/schedules                   {"agent", "message", "cron"? | "every_s"?, "timezone"?,
                                             "thread_id"?, "overlap"?, "paused"?, "note"?, "webhook_url"?,
                                             "name"?, "jitter_s"?, "start_at"?, "end_at"?} -> 201 the schedule
    GET    /api/schedules                   {"schedules": [...]}: the caller's
    GET    /api/schedules/{id}              the schedule, `recent_firings` (each one's thread and request)
    POST   /api/schedules/{id}/pause        {"note"?} -> the schedule
    POST   /api/schedules/{id}/unpause      {"note"?} -> the schedule
    POST   /api/schedules/{id}/trigger      -> 202 {"schedule_id"}
    DELETE /api/schedules/{id}              -> {"deleted": id}

A schedule's `{id}` is its name among the caller's (`schedule/<principal>/<name>` in Temporal,
`clients.schedules.schedule_id_of`): another principal's schedule is a name the caller does not
have, so it is 404 `not_found` like a missing one. `thread_id` names the caller's thread with
`agent` (the session `gw/<principal>/<agent>/<thread>`); without it, each firing starts a fresh
thread of the caller's, `sched-<name>-<time of the firing>`. Bad input is 400 `invalid_input`
naming the field.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import datetime
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from clients.errors import RejectedError
from clients.schedules import Schedules, schedule_id_of
from contracts.errors import NOT_FOUND, QUOTA_EXCEEDED
from contracts.schedules import ScheduleView
from gateway.context import GatewayContext, resolve_agent
from gateway.errors import GatewayError, not_found
from gateway.http_input import principal_of, read_object
from gateway.identity.principal import Principal
from gateway.owners import PREFIX, parse_session_id, session_id

__all__ = ["routes"]

T = TypeVar("T")
FIELDS = frozenset(
    {
        "agent",
        "message",
        "cron",
        "every_s",
        "timezone",
        "thread_id",
        "overlap",
        "paused",
        "note",
        "webhook_url",
        "name",
        "jitter_s",
        "start_at",
        "end_at",
    }
)


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The schedules API (the room's `routes` adds the background requests)."""
    api = _SchedulesApi(ctx)
    return [
        Route("/api/schedules", api.create, methods=["POST"]),
        Route("/api/schedules", api.list, methods=["GET"]),
        Route("/api/schedules/{name}", api.show, methods=["GET"]),
        Route("/api/schedules/{name}", api.delete, methods=["DELETE"]),
        Route("/api/schedules/{name}/pause", api.pause, methods=["POST"]),
        Route("/api/schedules/{name}/unpause", api.unpause, methods=["POST"]),
        Route("/api/schedules/{name}/trigger", api.trigger, methods=["POST"]),
    ]


async def _called(call: Awaitable[T]) -> T:
    """`await call`, a refusal of the typed client as 400 (naming the field) or 404 `not_found`."""
    try:
        return await call
    except RejectedError as refused:
        if refused.code == NOT_FOUND:
            raise not_found("schedule") from None
        if refused.code == QUOTA_EXCEEDED:  # the owner's schedules are at their bound: 429
            raise GatewayError.refused(refused.code, refused.message) from None
        raise GatewayError(400, refused.code, refused.message) from None


def _typed(body: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = body.get(name)
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is int)):
        raise GatewayError.invalid_input(f"{name}: {what}")
    return value


def _time(body: dict[str, Any], name: str) -> datetime | None:
    value = _typed(body, name, str, "an ISO 8601 time with its UTC offset")
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise GatewayError.invalid_input(f"{name}: an ISO 8601 time with its UTC offset") from None


class _SchedulesApi:
    def __init__(self, ctx: GatewayContext) -> None:
        self._ctx = ctx
        self._schedules = Schedules(ctx.client, task_queue=ctx.settings.task_queue)

    def _view(self, principal: Principal, view: ScheduleView) -> dict[str, Any]:
        """A schedule as the caller sees it: its name as `schedule_id`, threads as the caller's thread ids."""
        body = view.model_dump(mode="json", exclude={"owner", "session_id", "fresh_session_prefix"})
        body["schedule_id"] = view.schedule_id.rpartition("/")[2]
        owned = parse_session_id(principal, view.session_id) if view.session_id else None
        body["thread_id"] = owned[1] if owned else None
        for firing, shown in zip(view.recent_firings, body["recent_firings"], strict=True):
            thread = parse_session_id(principal, firing.thread_id) if firing.thread_id else None
            shown["thread_id"] = thread[1] if thread else None
        return body

    def _id(self, request: Request) -> tuple[Principal, str]:
        principal = principal_of(request)
        try:
            return principal, schedule_id_of(principal.name, request.path_params["name"])
        except RejectedError:
            raise not_found("schedule") from None

    async def create(self, request: Request) -> Response:
        principal = principal_of(request)
        fields = await read_object(request, FIELDS)
        agent = _typed(fields, "agent", str, "the name of one of the gateway's agents")
        message = _typed(fields, "message", str, "a string")
        if agent is None or message is None:
            raise GatewayError.invalid_input(f"{'agent' if agent is None else 'message'}: required")
        resolved = await resolve_agent(self._ctx, agent)  # pinned: the version `agent` names now
        agent, config = resolved.name, resolved.config
        name = _typed(fields, "name", str, "a string") or uuid.uuid4().hex[:8]
        thread = _typed(fields, "thread_id", str, "a thread id")
        named = session_id(principal, agent, thread) if thread is not None else None
        view = await _called(
            self._schedules.create(
                owner=principal.name,
                agent_id=agent,
                config=config,
                message=message,
                name=name,
                cron=_typed(fields, "cron", str, "a cron expression"),
                every_s=_typed(fields, "every_s", int, "a whole number of seconds"),
                timezone=_typed(fields, "timezone", str, "an IANA time zone"),
                jitter_s=_typed(fields, "jitter_s", int, "a whole number of seconds"),
                start_at=_time(fields, "start_at"),
                end_at=_time(fields, "end_at"),
                paused=bool(_typed(fields, "paused", bool, "true or false")),
                note=_typed(fields, "note", str, "a string"),
                session_id=named,
                fresh_session_prefix=None if named else f"{PREFIX}/{principal.name}/{agent}/sched-{name}-",
                overlap=_typed(fields, "overlap", str, "skip, buffer_one, cancel_other or allow_all"),
                webhook_url=_typed(fields, "webhook_url", str, "an http(s) URL"),
            )
        )
        return JSONResponse(self._view(principal, view), status_code=201)

    async def list(self, request: Request) -> Response:
        principal = principal_of(request)
        views = await _called(self._schedules.list(principal.name))
        return JSONResponse({"schedules": [self._view(principal, v) for v in views]})

    async def show(self, request: Request) -> Response:
        principal, schedule_id = self._id(request)
        return JSONResponse(self._view(principal, await _called(self._schedules.describe(schedule_id))))

    async def pause(self, request: Request) -> Response:
        principal, schedule_id = self._id(request)
        note = await self._note(request)
        return JSONResponse(self._view(principal, await _called(self._schedules.pause(schedule_id, note))))

    async def unpause(self, request: Request) -> Response:
        principal, schedule_id = self._id(request)
        note = await self._note(request)
        return JSONResponse(self._view(principal, await _called(self._schedules.unpause(schedule_id, note))))

    async def trigger(self, request: Request) -> Response:
        _, schedule_id = self._id(request)
        await _called(self._schedules.trigger(schedule_id))
        return JSONResponse({"schedule_id": request.path_params["name"]}, status_code=202)

    async def delete(self, request: Request) -> Response:
        _, schedule_id = self._id(request)
        await _called(self._schedules.delete(schedule_id))
        return JSONResponse({"deleted": request.path_params["name"]})

    @staticmethod
    async def _note(request: Request) -> str | None:
        raw = await request.body()
        if not raw.strip():
            return None
        return _typed(await read_object(request), "note", str, "a string")
