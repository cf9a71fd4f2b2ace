"""The activity table and the order its options resolve in: table default -> deployment -> agent.

The layering tests run real workers on the real dev server and read each scheduled
activity's options back from workflow history (`ActivityTaskScheduled`), or, for a local
activity (which history records only as a marker), from the timeout it ran into.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from activities.tools.calculator import calculator
from activities.tools.tool_registry import ToolRegistry
from contracts import LLMRequest, ResolveToolsRequest, Segment, SegmentRef, ToolCallRequest
from contracts.activities import (
    ACTIVITIES,
    LLM_CALL,
    RUN_TOOL,
    ActivityOptions,
    ActivityOverride,
    UnknownActivityError,
)
from contracts.agent import AgentConfig
from contracts.compaction import SummarizeRequest
from contracts.llm import CountTokensRequest
from contracts.snapshot import ExportSnapshotRequest, RestoreSnapshotRequest
from conversation import Context, Message, MessageEntry, MessagePayload, ToolCall
from payloads.blob_store import BlobStore
from tests.agent_tools import slow
from tests.helpers import call, start_run, turn
from worker import build_worker
from workflows.activity_options import ActivityOptionsInterceptor

CALCULATOR_SCRIPT = [turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]), turn("It is 42.")]
Scheduled = dict[str, tuple[float, int, float]]
"""Activity name -> (start-to-close s, maximum attempts, heartbeat timeout s) of its first scheduling."""


# ---- the table -----------------------------------------------------------------------------


async def test_the_worker_registers_exactly_the_activities_of_the_table(client: Client) -> None:
    worker = build_worker(client, task_queue=f"table-{uuid.uuid4().hex[:8]}")
    registered: list[Any] = cast(dict[str, Any], worker.config(active_config=True))["activities"]
    names = {getattr(fn, "__temporal_activity_definition").name for fn in registered}
    assert names == set(ACTIVITIES)


def test_each_activity_has_its_web_ui_summary() -> None:
    tool_call = ToolCall(id="call_1", name="calculator", arguments="{}")
    entries = [
        MessageEntry(seq=seq, at=datetime.now(UTC), payload=MessagePayload(role="user", content="hi"))
        for seq in (4, 5)
    ]
    inputs: dict[str, Any] = {
        "llm_call": LLMRequest(model="gpt-4o-mini", iteration=3),
        "run_tool": ToolCallRequest(call=tool_call),
        "resolve_tools": ResolveToolsRequest(names=["calculator"]),
        "export_snapshot": ExportSnapshotRequest(agent_id="a", context_ref="main", context=Context()),
        "restore_snapshot": RestoreSnapshotRequest(token="rt2.x"),
        "summarize": SummarizeRequest(model="gpt-4o-mini", messages=[]),
        "count_tokens": CountTokensRequest(model="m", messages=[Message(role="user", content="a")] * 2),
        "archive_segment": Segment(first_seq=4, entries=list(entries)),
        "read_segment": SegmentRef(digest="d", first_seq=4, last_seq=5, size_bytes=1),
    }
    assert {name: ACTIVITIES[name].summary(arg) for name, arg in inputs.items()} == {
        "llm_call": "llm gpt-4o-mini #3",
        "run_tool": "tool calculator call_1",
        "resolve_tools": "resolve tool calculator",
        "export_snapshot": "export main",
        "restore_snapshot": "restore snapshot",
        "summarize": "summarize gpt-4o-mini",
        "count_tokens": "count tokens (2 messages)",
        "archive_segment": "archive entries 4-5",
        "read_segment": "read entries 4-5",
    }
    assert all(isinstance(arg, ACTIVITIES[name].input_type) for name, arg in inputs.items())


def test_the_table_defaults_are_the_agent_configs_defaults() -> None:
    config = AgentConfig(model="m")
    assert LLM_CALL.defaults.start_to_close_timeout_s == config.llm_timeout_s + 30
    assert LLM_CALL.defaults.maximum_attempts == config.llm_max_attempts
    assert RUN_TOOL.defaults.start_to_close_timeout_s == config.tool_timeout_s
    assert RUN_TOOL.defaults.maximum_attempts == config.tool_max_retries + 1
    # An agent at the defaults sets nothing, so a deployment override is not undone by them.
    assert all(spec.per_agent(config).set_fields() == {} for spec in ACTIVITIES.values())


def test_later_layers_win_field_by_field_and_intervals_stay_in_order() -> None:
    base = ActivityOptions(start_to_close_timeout_s=10, maximum_attempts=3, maximum_interval_s=30)
    deployment = ActivityOverride(start_to_close_timeout_s=20, initial_interval_s=5).set_fields()
    agent = LLM_CALL.per_agent(AgentConfig(model="m", llm_max_attempts=9)).set_fields()
    assert base.layered(deployment).layered(agent) == ActivityOptions(
        start_to_close_timeout_s=20, maximum_attempts=9, initial_interval_s=5, maximum_interval_s=30
    )
    assert base.layered({"initial_interval_s": 60}).maximum_interval_s == 60


def test_overrides_are_bounded_and_checked_by_name() -> None:
    with pytest.raises(ValidationError):
        ActivityOverride.model_validate({"start_to_close_timeout": 5})  # a misspelt field
    with pytest.raises(ValidationError):
        ActivityOverride(start_to_close_timeout_s=-1)
    with pytest.raises(ValidationError):
        ActivityOverride(initial_interval_s=10, maximum_interval_s=1)
    with pytest.raises(UnknownActivityError, match="'llm'; activities: llm_call, run_tool"):
        ActivityOptionsInterceptor({"llm": ActivityOverride(maximum_attempts=1)})


# ---- the layers, read from history -----------------------------------------------------------


@asynccontextmanager
async def worker_on(
    client: Client,
    store: BlobStore,
    overrides: Mapping[str, ActivityOverride] | None = None,
    registry: ToolRegistry | None = None,
    sandboxed: bool = False,
) -> AsyncIterator[str]:
    """A worker of its own task queue, with these deployment overrides (if any); yields the queue."""
    queue = f"layers-{uuid.uuid4().hex[:8]}"
    if registry is None:
        registry = ToolRegistry()
        registry.register(calculator)
    interceptors = [ActivityOptionsInterceptor(overrides)] if overrides is not None else []
    options: dict[str, Any] = {"max_cached_workflows": 0, "interceptors": interceptors}
    async with build_worker(
        client, task_queue=queue, registry=registry, store=store, sandboxed=sandboxed, **options
    ):
        yield queue


async def scheduled(handle: WorkflowHandle[Any, Any]) -> Scheduled:
    """Each activity's options as its first `ActivityTaskScheduled` event recorded them."""
    await handle.result()
    found: Scheduled = {}
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            timeout, heartbeat = attributes.start_to_close_timeout, attributes.heartbeat_timeout
            found.setdefault(
                attributes.activity_type.name,
                (
                    timeout.seconds + timeout.nanos / 1e9,
                    attributes.retry_policy.maximum_attempts,
                    heartbeat.seconds,
                ),
            )
    return found


async def test_each_layer_wins_where_it_should(client: Client, store: BlobStore) -> None:
    deployment = {
        "llm_call": ActivityOverride(start_to_close_timeout_s=45, maximum_attempts=7),
        "run_tool": ActivityOverride(start_to_close_timeout_s=9, maximum_attempts=4),
    }
    # Two workers in one process, one with overrides and one without: neither sees the other's.
    async with worker_on(client, store) as plain, worker_on(client, store, deployment) as deployed:
        table = await start_run(client, plain, CALCULATOR_SCRIPT, tools=["calculator"])
        overridden = await start_run(client, deployed, CALCULATOR_SCRIPT, tools=["calculator"])
        agent = await start_run(
            client, deployed, CALCULATOR_SCRIPT, tools=["calculator"], llm_timeout_s=20, tool_max_retries=0
        )
        assert await scheduled(table) == {"llm_call": (150, 5, 10), "run_tool": (15, 2, 0)}
        assert await scheduled(overridden) == {"llm_call": (45, 7, 10), "run_tool": (9, 4, 0)}
        # The agent's own settings win for the fields it sets; the deployment's stay for the rest.
        assert await scheduled(agent) == {"llm_call": (50, 7, 10), "run_tool": (9, 1, 0)}


async def test_overrides_reach_sandboxed_workflows(client: Client, store: BlobStore) -> None:
    deployment = {"llm_call": ActivityOverride(start_to_close_timeout_s=33, heartbeat_timeout_s=4)}
    async with worker_on(client, store, deployment, sandboxed=True) as queue:
        handle = await start_run(client, queue, [turn("42")])
        assert await scheduled(handle) == {"llm_call": (33, 5, 4)}


async def test_a_local_tool_runs_with_the_same_layers(client: Client, store: BlobStore) -> None:
    registry = ToolRegistry()
    registry.register(slow, name="nap", local=True)
    deployment = {"run_tool": ActivityOverride(start_to_close_timeout_s=0.5, maximum_attempts=1)}
    script = [turn(tool_calls=[call("nap", {"seconds": 2})]), turn("done")]
    async with worker_on(client, store, deployment, registry=registry) as queue:
        timed_out = await (await start_run(client, queue, script, tools=["nap"])).result()
        patient = await (await start_run(client, queue, script, tools=["nap"], tool_timeout_s=10)).result()
    tool_results = [
        [
            json.loads(e.payload.content)
            for e in result.entries
            if isinstance(e, MessageEntry) and e.payload.role == "tool"
        ]
        for result in (timed_out, patient)
    ]
    assert tool_results[0][0]["error"]["type"] == "timeout"
    assert tool_results[0][0]["error"]["message"] == "tool nap timed out after 0.5s"
    assert tool_results[1] == [{"ok": True, "result": "slept 2.0s"}]
