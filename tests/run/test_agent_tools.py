"""Agents as tools: each call is a child `ReActRun`; its answer is the result, its usage rolls up."""

from __future__ import annotations

import json
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from contracts import RunResult
from contracts.errors import AGENT_DEPTH_EXCEEDED, CANCELLED, UNKNOWN_AGENT
from contracts.signals import CancelInput, SteerInput
from conversation import MessageEntry
from testing import answer
from tests.agent_tools import RESEARCHER_ANSWER
from tests.helpers import call, start_run, state_of, trace_of, turn, update, wait_until


def _tool_results(result: RunResult) -> list[dict[str, Any]]:
    return [
        json.loads(entry.payload.content)
        for entry in result.entries
        if isinstance(entry, MessageEntry) and entry.payload.role == "tool"
    ]


def _agent(name: str, *turns: Any, **config: Any) -> dict[str, Any]:
    """An inline agent tool of the scripted model."""
    script = [t.model_dump(mode="json", exclude_defaults=True) for t in turns]
    return {"name": name, "config": {"model": "scripted", "script": script, **config}}


async def _child_starts(handle: WorkflowHandle[Any, Any]) -> list[str]:
    return [
        event.start_child_workflow_execution_initiated_event_attributes.workflow_id
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]


async def test_a_profile_agent_answers_as_a_child_run_and_its_usage_rolls_up(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("researcher", {"query": "what is the answer?"}, "a1")]), turn("It is 42.")],
        agents=[{"name": "researcher"}],
    )
    result = await handle.result()
    assert result.status == "completed" and result.answer == "It is 42."
    assert _tool_results(result) == [{"ok": True, "result": RESEARCHER_ANSWER}]
    (child_id,) = await _child_starts(handle)
    assert child_id == f"{handle.id}/agent-1"
    child = client.get_workflow_handle(child_id, result_type=RunResult)
    description = await child.describe()
    assert description.parent_id == handle.id  # a child of the caller in the Web UI
    child_result = await child.result()
    assert child_result.answer == RESEARCHER_ANSWER
    assert child_result.outcome.usage.llm_calls == 1
    assert result.outcome.usage.llm_calls == 3  # its own two calls and the child's one
    assert result.outcome.usage.total_tokens > child_result.outcome.usage.total_tokens > 0
    started = [e for e in (await trace_of(handle)).events if e.kind == "agent_started"]
    assert [(e.call_id, e.data["workflow_id"]) for e in started] == [("a1", child_id)]


async def test_an_inline_agent_sees_the_query_and_the_caller_model_sees_its_spec(
    client: Client, task_queue: str
) -> None:
    helper = _agent("translator", answer("bonjour"))
    helper["description"] = "Translates into French"
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("translator", {"query": "hello"})]), turn("done")],
        agents=[helper],
    )
    result = await handle.result()
    assert _tool_results(result) == [{"ok": True, "result": "bonjour"}]
    (child_id,) = await _child_starts(handle)
    child = await client.get_workflow_handle(child_id, result_type=RunResult).result()
    assert next(e.payload.content for e in child.entries if isinstance(e, MessageEntry)) == "hello"
    specs = [
        event.activity_task_scheduled_event_attributes
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    first_llm_input = json.loads(specs[0].input.payloads[0].data)
    assert first_llm_input["tool_specs"][0]["name"] == "translator"
    assert first_llm_input["tool_specs"][0]["description"] == "Translates into French"


async def test_a_call_past_max_agent_depth_is_refused_by_name_and_starts_nothing(
    client: Client, task_queue: str
) -> None:
    grandchild = _agent("deep", answer("never"))
    child = _agent(
        "middle",
        turn(tool_calls=[call("deep", {"query": "go deeper"})]),
        answer("middle done"),
        agents=[grandchild],
        max_agent_depth=5,  # its own bound is higher: the caller's bound of 1 still holds
    )
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("middle", {"query": "start"})]), turn("top done")],
        agents=[child],
        max_agent_depth=1,
    )
    result = await handle.result()
    assert result.answer == "top done"
    (child_id,) = await _child_starts(handle)
    child_handle = client.get_workflow_handle(child_id, result_type=RunResult)
    child_result = await child_handle.result()
    (refused,) = _tool_results(child_result)
    assert refused["ok"] is False and refused["error"]["type"] == AGENT_DEPTH_EXCEEDED
    assert await _child_starts(child_handle) == []


async def test_max_agent_depth_zero_offers_no_agent(client: Client, task_queue: str) -> None:
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("researcher", {"query": "x"})]), turn("ok")],
        agents=[{"name": "researcher"}],
        max_agent_depth=0,
    )
    result = await handle.result()
    (refused,) = _tool_results(result)
    assert refused["error"]["type"] == AGENT_DEPTH_EXCEEDED
    assert await _child_starts(handle) == []


async def test_an_unknown_profile_fails_the_run_by_name_before_any_llm_call(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("never")], agents=[{"name": "nobody"}])
    try:
        await handle.result()
        raise AssertionError("the run should have failed")
    except WorkflowFailureError as err:
        assert getattr(err.cause, "type", None) == UNKNOWN_AGENT
        assert "nobody" in str(err.cause) and "researcher" in str(err.cause)
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled == ["resolve_agents"]


async def test_cancelling_the_parent_cancels_the_child(client: Client, task_queue: str) -> None:
    slow_agent = _agent("slow_agent", answer("late", delay_s=30))
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("slow_agent", {"query": "take your time"})]), turn("never")],
        agents=[slow_agent],
    )
    await wait_until(handle, lambda s, _t: any(c.agent_workflow_id for c in s.pending_tool_calls))
    child_id = (await state_of(handle)).pending_tool_calls[0].agent_workflow_id
    assert child_id is not None
    ack = await update(handle, "cancel", CancelInput(reason="stop"))
    assert ack.status == "accepted"
    result = await handle.result()
    assert result.status == "cancelled"
    (tool_result,) = _tool_results(result)
    assert tool_result["ok"] is False and tool_result["error"]["type"] == CANCELLED
    child = client.get_workflow_handle(child_id, result_type=RunResult)
    child_result = await child.result()
    assert child_result.status == "cancelled"
    assert (await child.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_an_interrupting_steer_cancels_the_child_and_counts_its_usage(
    client: Client, task_queue: str
) -> None:
    slow_agent = _agent(
        "slow_agent",
        turn(tool_calls=[call("calculator", {"expression": "1+1"})]),
        answer("late", delay_s=30),
        tools=["calculator"],
    )
    handle = await start_run(
        client,
        task_queue,
        [turn(tool_calls=[call("slow_agent", {"query": "work"})]), turn("replanned")],
        agents=[slow_agent],
    )
    _, trace = await wait_until(handle, lambda _s, t: any(e.kind == "agent_started" for e in t.events))
    child_id = next(e for e in trace.events if e.kind == "agent_started").data["workflow_id"]
    assert isinstance(child_id, str)
    child = client.get_workflow_handle(child_id, result_type=RunResult)
    await wait_until(child, lambda s, _t: s.outcome.usage.llm_calls >= 1)
    ack = await update(handle, "steer", SteerInput(content="never mind", mode="interrupt"))
    assert ack.status == "queued" and ack.mode == "interrupt"
    result = await handle.result()
    assert result.answer == "replanned"
    (tool_result,) = _tool_results(result)
    assert tool_result["error"]["type"] == CANCELLED and "interrupted" in tool_result["error"]["message"]
    child_result = await child.result()
    assert child_result.status == "cancelled"
    assert result.outcome.usage.llm_calls == 2 + child_result.outcome.usage.llm_calls
