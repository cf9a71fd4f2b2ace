"""Retention on the worker: its setting, the Schedule it keeps, and the sweep that erases idle threads.

`REACT_RETENTION_DAYS` (a whole number of days, 1 to 36500; unset: keep everything) is read once
at start-up (`retention_days`). The worker keeps the Schedule `react-retention` in line with it
(`keep_retention_schedule`): created, or updated when its period changed, while the setting is
set; deleted when it is not. Every hour the Schedule starts a `RetentionSweep` workflow
(`workflows.background.retention_sweep`) whose activity, `sweep_idle_threads`, is here because it
erases through the typed client (`SessionHandle.delete`: the session, every run it started, and
their children; forks are kept), which activities below `hosting` may not import.

A session is idle since its newest request ended, or since it started when it has none; a
session with a request running or queued is never idle. Candidates are read from visibility
(the sessions whose current execution started before the cutoff: a thread used since has
continued, or is answered by a run newer than that), then each running one's records are asked
for (a session whose records cannot be read is kept for the next sweep). Each erase writes one
line to the `react.audit` logger, as the gateway's erases do (principal `retention`, action
`erase`). Memory items outlive threads (they have their own TTL) and are not touched.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from temporalio import activity
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowExecutionStatus,
)
from temporalio.service import RPCError, RPCStatusCode

from clients.errors import RejectedError
from clients.sessions import Sessions
from contracts.activities import SWEEP_IDLE_THREADS_ACTIVITY
from contracts.retention import (
    MAX_LISTED_ERASED,
    RETENTION_SCHEDULE_ID,
    RETENTION_WORKFLOW_ID,
    RETENTION_WORKFLOW_TYPE,
    RetentionInput,
    RetentionResult,
)
from contracts.session import SESSION_WORKFLOW_TYPE
from settings.env_values import whole

__all__ = [
    "RETENTION_DAYS_ENV",
    "SWEEP_EVERY",
    "keep_retention_schedule",
    "retention_days",
    "sweep_idle_threads",
]

RETENTION_DAYS_ENV: Final = "REACT_RETENTION_DAYS"
MAX_RETENTION_DAYS: Final = 36_500
SWEEP_EVERY: Final = timedelta(hours=1)
"""How often the Schedule sweeps: a thread is erased at most this long after it turns idle."""
AUDIT_LOGGER: Final = "react.audit"
"""The gateway's audit logger (`gateway.identity.audit`), which the sweep writes to as well."""
RETENTION_PRINCIPAL: Final = "retention"


def retention_days(environ: Mapping[str, str] | None = None) -> int | None:
    """`REACT_RETENTION_DAYS`: days a thread may stay idle before it is erased (None: forever).

    Raises:
        SettingsError: not a whole number from 1 to 36500.
    """
    return whole(os.environ if environ is None else environ, RETENTION_DAYS_ENV, 1, MAX_RETENTION_DAYS)


def _schedule(days: int, task_queue: str) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            RETENTION_WORKFLOW_TYPE,
            RetentionInput(idle_s=days * 86_400.0),
            id=RETENTION_WORKFLOW_ID,
            task_queue=task_queue,
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=SWEEP_EVERY)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def keep_retention_schedule(client: Client, task_queue: str, days: int | None) -> str:
    """Make the retention Schedule match `days` (None: no Schedule); what was done, for the log."""
    handle = client.get_schedule_handle(RETENTION_SCHEDULE_ID)
    if days is None:
        try:
            await handle.delete()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            return "off"
        return "off (its Schedule deleted)"
    wanted = _schedule(days, task_queue)
    try:
        await client.create_schedule(RETENTION_SCHEDULE_ID, wanted)
    except ScheduleAlreadyRunningError:

        def update(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=wanted)

        await handle.update(update)  # another worker's setting may differ: the newest start wins
        return f"{days} days (Schedule updated)"
    return f"{days} days (Schedule created)"


@activity.defn(name=SWEEP_IDLE_THREADS_ACTIVITY)
async def sweep_idle_threads(sweep: RetentionInput) -> RetentionResult:
    """Erase the sessions idle for at least `sweep.idle_s` seconds, at most `sweep.limit` of them."""
    client = activity.client()
    sessions = Sessions(client, task_queue=activity.info().task_queue)
    cutoff = datetime.now(UTC) - timedelta(seconds=sweep.idle_s)
    query = (
        f"WorkflowType = '{SESSION_WORKFLOW_TYPE}' AND ExecutionStatus != 'ContinuedAsNew' "
        f"AND StartTime < '{cutoff.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    )
    if sweep.id_prefix:  # its pattern has no quote
        query += f" AND WorkflowId STARTS_WITH '{sweep.id_prefix}'"
    result = RetentionResult()
    seen: set[str] = set()
    async for execution in client.list_workflows(query):
        if result.erased >= sweep.limit:
            break
        if execution.id in seen or not execution.id.startswith(sweep.id_prefix):
            continue
        seen.add(execution.id)
        result.checked += 1
        activity.heartbeat(result.checked)
        idle_since = execution.close_time or execution.start_time
        if execution.status == WorkflowExecutionStatus.RUNNING:
            try:
                records = await sessions.get(execution.id).requests()
            except (RejectedError, RPCError):
                result.skipped += 1
                continue
            if any(record.finished_at is None for record in records):
                continue  # a request runs or waits: in use
            ended = [record.finished_at for record in records if record.finished_at is not None]
            idle_since = max([execution.start_time, *ended])
        if idle_since >= cutoff:
            continue
        try:
            await sessions.get(execution.id).delete()
        except RejectedError:
            continue  # erased meanwhile
        result.erased += 1
        if len(result.erased_ids) < MAX_LISTED_ERASED:
            result.erased_ids.append(execution.id)
        _audit(execution.id, idle_since)
    return result


def _audit(session_id: str, idle_since: datetime) -> None:
    line = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "principal": RETENTION_PRINCIPAL,
        "action": "erase",
        "target": session_id,
        "outcome": "erased",
        "idle_since": idle_since.isoformat(timespec="seconds"),
    }
    logging.getLogger(AUDIT_LOGGER).info(json.dumps(line, separators=(",", ":")))
