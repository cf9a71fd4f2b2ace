"""A session's run that does not exist yet: waiting until the session starts it.

A session answers an ask once the run it names has been started, except an `enqueued`
ask: its run starts when the requests before it have ended. Its `run_workflow_id`
(`<session id>-run-<n>`) is promised, not yet there, so Temporal answers `NOT_FOUND` for
it. `RunHandle` calls `until_started` on `NOT_FOUND`: when the session that the id names
keeps a request with that run and the request has not ended, it waits (polling with
backoff: the run's `describe`, the session's `requests` query, neither in any history)
until the run exists, and the call is made again (the first few checks are `describe`s
alone: a run just started appears within milliseconds). An id no session names, or whose
request ended without a run, raises the original `NOT_FOUND` at once.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from pydantic import TypeAdapter
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from contracts.session import RequestRecord

SESSION_RUN_ID = re.compile(r"^(?P<session>.+)-run-[1-9][0-9]*$", re.DOTALL)
"""A session's run workflow id: the session's id, `-run-`, the session's request number."""
FIRST_CHECK_S = 0.02
LONGEST_CHECK_S = 1.0
DESCRIBES_FIRST = 3
"""Checks by `describe` alone before the session is asked: a run the session has just started
appears within milliseconds, and a `describe` costs no worker a query."""
QUERY_RETRY_S = 30.0
RECORDS: TypeAdapter[list[RequestRecord]] = TypeAdapter(list[RequestRecord])


def session_of(run_workflow_id: str) -> str | None:
    """The session id a run workflow id names (None: not a session's run, or its id was shortened)."""
    found = SESSION_RUN_ID.fullmatch(run_workflow_id)
    return found.group("session") if found is not None else None


def is_not_found(error: BaseException) -> bool:
    """Whether Temporal answered that no workflow has the id."""
    return isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND


async def until_started(client: Client, run_workflow_id: str, session_id: str | None = None) -> bool:
    """Wait until the session's promised run `run_workflow_id` exists; False when none is promised.

    `session_id` defaults to the one the id names (`session_of`). A session query that fails
    for a passing reason (a timeout while the session's worker is busy) is asked again, for at
    most `QUERY_RETRY_S`.
    """
    session_id = session_id or session_of(run_workflow_id)
    if session_id is None:
        return False
    session, run = client.get_workflow_handle(session_id), client.get_workflow_handle(run_workflow_id)
    wait, failing_since, checks = FIRST_CHECK_S, None, 0
    while True:
        if await _exists(run):
            return True
        checks += 1
        if checks <= DESCRIBES_FIRST:
            await asyncio.sleep(wait)
            wait = min(wait * 2, LONGEST_CHECK_S)
            continue
        try:
            raw: object = await session.query("requests", result_type=list[RequestRecord])
            records, failing_since = RECORDS.validate_python(raw), None
        except (RPCError, WorkflowQueryFailedError) as error:
            if is_not_found(error) or "unknown queryType" in str(error):
                return False  # no such session, or not a session: nothing is promised
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since > QUERY_RETRY_S:
                raise
            records = None
        if records is not None:
            record = next((r for r in records if r.run_workflow_id == run_workflow_id), None)
            if record is None:
                return False
            if record.finished_at is not None:
                return await _exists(run)  # it ended: with a run (created since the check) or without
        await asyncio.sleep(wait)
        wait = min(wait * 2, LONGEST_CHECK_S)


async def _exists(run: WorkflowHandle[Any, Any]) -> bool:
    try:
        await run.describe()
    except RPCError as error:
        if not is_not_found(error):
            raise
        return False
    return True


class StartWaits:
    """One wait at a time per handle: the handle's concurrent calls share it (one session query)."""

    def __init__(self, client: Client, run_workflow_id: str) -> None:
        """Wait for `run_workflow_id`, of the session its id names."""
        self._client = client
        self._run_workflow_id = run_workflow_id
        self._task: asyncio.Task[bool] | None = None

    async def appeared(self) -> bool:
        """Whether the run exists now, having waited for it if a session promises it."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(until_started(self._client, self._run_workflow_id))
        return await asyncio.shield(self._task)
