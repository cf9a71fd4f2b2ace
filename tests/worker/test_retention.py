"""Retention (`REACT_RETENTION_DAYS`): the sweep erases idle threads, and the worker keeps its Schedule.

A real dev server and worker: a `RetentionSweep` erases a session idle for longer than its
`idle_s` (with every run it started), keeps one used since, and keeps one whose request still
runs; each erase is one audit line. The Schedule is created, updated and deleted with the
setting; a bad setting is refused by name.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import pytest
from temporalio.client import ScheduleActionStartWorkflow

from contracts.retention import (
    RETENTION_SCHEDULE_ID,
    RETENTION_WORKFLOW_TYPE,
    RetentionInput,
    RetentionResult,
)
from hosting.retention import AUDIT_LOGGER, keep_retention_schedule, retention_days
from settings.env_values import SettingsError
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.helpers import workflow_exists

IDLE_S = 4.0
"""Idle time of the sweeps here: the old session waits past it, the fresh one is used within it."""


async def sweep(agents: AgentTestEnvironment, idle_s: float, prefix: str) -> RetentionResult:
    """One sweep of this test's sessions only (the dev server is the whole test session's)."""
    result: RetentionResult = await agents.client.execute_workflow(
        RETENTION_WORKFLOW_TYPE,
        RetentionInput(idle_s=idle_s, id_prefix=prefix),
        id=f"sweep-{uuid.uuid4().hex[:8]}",
        task_queue=agents.task_queue,
        result_type=RetentionResult,
    )
    return result


async def test_a_sweep_erases_idle_threads_and_keeps_used_and_running_ones(
    agents: AgentTestEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = f"retention-{uuid.uuid4().hex[:8]}/"
    old, fresh, busy = (agents.sessions.get(f"{prefix}{name}") for name in ("old", "fresh", "busy"))
    done = await old.ask_sync("hello", config=scripted_agent(answer("hi")))
    assert done.status == "completed"
    await asyncio.sleep(IDLE_S + 1)  # `old` is now idle for longer than IDLE_S
    running = await busy.ask("wait", config=scripted_agent(answer("late", delay_s=60)))
    assert (await fresh.ask_sync("hello", config=scripted_agent(answer("hi")))).status == "completed"
    with caplog.at_level(logging.INFO, logger=AUDIT_LOGGER):
        result = await sweep(agents, IDLE_S, prefix)
    assert result.erased_ids == [old.workflow_id], result
    assert fresh.workflow_id not in result.erased_ids and busy.workflow_id not in result.erased_ids
    async with asyncio.timeout(30):  # Temporal deletes asynchronously
        for workflow_id in (old.workflow_id, done.run_workflow_id):
            while await workflow_exists(agents.client, workflow_id):  # noqa: ASYNC110 (a poll of Temporal)
                await asyncio.sleep(0.1)
    assert await workflow_exists(agents.client, fresh.workflow_id)
    assert await workflow_exists(agents.client, running.run_workflow_id)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER]
    audited = [line for line in lines if line["target"] == old.workflow_id]
    assert [(line["principal"], line["action"]) for line in audited] == [("retention", "erase")]
    await busy.cancel(running.request_id)


async def test_the_worker_keeps_the_schedule_in_line_with_its_setting(agents: AgentTestEnvironment) -> None:
    client, handle = agents.client, agents.client.get_schedule_handle(RETENTION_SCHEDULE_ID)
    assert (await keep_retention_schedule(client, agents.task_queue, 30)).endswith("created)")
    described = await handle.describe()
    action = described.schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow) and action.workflow == RETENTION_WORKFLOW_TYPE
    assert (await keep_retention_schedule(client, agents.task_queue, 7)).endswith("updated)")
    action = (await handle.describe()).schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    [arg] = action.args
    assert (
        RetentionInput.model_validate(client.data_converter.payload_converter.from_payload(arg)).idle_s
        == 7 * 86_400
    )
    assert await keep_retention_schedule(client, agents.task_queue, None) == "off (its Schedule deleted)"
    assert await keep_retention_schedule(client, agents.task_queue, None) == "off"


@pytest.mark.parametrize("raw", ["0", "-1", "1.5", "ten", "36501"])
def test_a_bad_retention_setting_is_refused_by_name(raw: str) -> None:
    with pytest.raises(SettingsError, match="REACT_RETENTION_DAYS"):
        retention_days({"REACT_RETENTION_DAYS": raw})


def test_retention_is_off_unless_set() -> None:
    assert retention_days({}) is None and retention_days({"REACT_RETENTION_DAYS": " "}) is None
    assert retention_days({"REACT_RETENTION_DAYS": "30"}) == 30
