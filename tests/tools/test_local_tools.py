"""Tools registered as local run as local activities, also when the worker caches no workflows.

The test worker runs with `max_cached_workflows=0` (every workflow task replays the
whole history), the harshest setting for local activities: their results must be
recorded as markers and replayed, never run twice.
"""

from __future__ import annotations

import json

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from conversation import Entry, MessageEntry
from tests.helpers import call, start_run, turn


def tool_results(result_entries: list[Entry]) -> list[dict[str, object]]:
    return [
        json.loads(e.payload.content)
        for e in result_entries
        if isinstance(e, MessageEntry) and e.payload.role == "tool"
    ]


async def test_a_local_tool_runs_as_a_local_activity_and_a_regular_one_does_not(
    client: Client, task_queue: str
) -> None:
    script = [
        turn(tool_calls=[call("shout", {"text": "hi"}, "l1"), call("echo", {"text": "there"}, "r1")]),
        turn(tool_calls=[call("shout", {"text": "again"}, "l2")]),
        turn("done"),
    ]
    handle = await start_run(client, task_queue, script, tools=["shout", "echo"])
    result = await handle.result()
    assert result.status == "completed" and result.result == "done"
    assert tool_results(result.entries) == [
        {"ok": True, "result": "HI"},
        {"ok": True, "result": "there"},
        {"ok": True, "result": "AGAIN"},
    ]
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled.count("run_tool") == 1  # `echo` only
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    local_results = [
        m for m in markers if m.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    assert len(local_results) == 2
    assert not any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events)


async def test_a_local_tool_failure_is_an_error_result_like_any_tool(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("shout", {"wrong": 1}, "l1")]), turn("noted")]
    handle = await start_run(client, task_queue, script, tools=["shout"])
    result = await handle.result()
    (outcome,) = tool_results(result.entries)
    assert outcome["ok"] is False
    error = outcome["error"]
    assert isinstance(error, dict) and error["type"] == "invalid_arguments"
