"""Usage and cost limits: a run ends `usage_limit_exceeded` before the call that would exceed a cap."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from pydantic import JsonValue, ValidationError
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from clients import sessions
from contracts import RunResult, ScriptTurn
from contracts.agent import AgentConfig, UsageBudget, UsageLimits
from contracts.session import AskInput, RequestResult
from tests.fake_openai import FakeOpenAI, chat_completion, tool_call
from tests.helpers import call, llm_inputs, start_run, state_of, trace_of, turn
from tests.session_helpers import new_session_id
from workflows.run.trace_log import preview

TOOL_THEN_ANSWER = [turn(tool_calls=[call("calculator", {"expression": "6 * 7"}, "c1")]), turn("42")]
THREE_CALLS = [
    turn(tool_calls=[call("calculator", {"expression": "6 * 7"}, "c1")]),
    turn(tool_calls=[call("calculator", {"expression": "6 * 8"}, "c2")]),
    turn("42"),
]


def _limits(**per_request: Any) -> dict[str, Any]:
    return {"per_request": per_request}


def _error(result: RunResult | RequestResult) -> tuple[str, str]:
    error = result.outcome.error
    assert result.outcome.status == "failed" and error is not None
    return error.type, error.message


# ---- per request -----------------------------------------------------------------------------


async def test_max_llm_calls_stops_before_the_call_and_shows_in_state_and_details(
    client: Client, task_queue: str
) -> None:
    limits = _limits(max_llm_calls=2)
    handle = await start_run(client, task_queue, THREE_CALLS, tools=["calculator"], usage_limits=limits)
    result = await handle.result()
    kind, message = _error(result)
    assert kind == "usage_limit_exceeded"
    assert "usage_limits.per_request.max_llm_calls is 2: 2 LLM calls were made already" in message
    assert len(await llm_inputs(handle)) == 2  # the third call was never made
    assert result.outcome.usage.llm_calls == 2
    state = await state_of(handle)
    assert state.usage_limits == UsageLimits(per_request=UsageBudget(max_llm_calls=2))
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "usage 2/2 calls" in metadata.current_details
    failed = [e for e in (await trace_of(handle)).events if e.kind == "request_failed"]
    assert failed[0].data["error"] == {"type": "usage_limit_exceeded", "message": preview(message)}


async def test_a_run_within_its_limits_completes(client: Client, task_queue: str) -> None:
    limits = _limits(max_llm_calls=3, max_total_tokens=100_000, max_cost_usd=0.01)
    handle = await start_run(client, task_queue, THREE_CALLS, tools=["calculator"], usage_limits=limits)
    result = await handle.result()
    assert result.status == "completed" and result.outcome.usage.llm_calls == 3
    assert (
        result.outcome.usage.unpriced_calls == 3 and result.outcome.usage.cost_usd == 0
    )  # scripted: no price


async def test_max_total_tokens_counts_the_next_calls_estimated_input(
    client: Client, task_queue: str
) -> None:
    probe = await start_run(client, task_queue, TOOL_THEN_ANSWER, tools=["calculator"])
    assert (await probe.result()).status == "completed"
    events = (await trace_of(probe)).events
    used = int(str(next(e.data["total_tokens"] for e in events if e.kind == "llm_completed")))
    estimate = int(str([e.data["estimated_tokens"] for e in events if e.kind == "llm_started"][1]))
    boundary = used + estimate

    over = await start_run(
        client,
        task_queue,
        TOOL_THEN_ANSWER,
        tools=["calculator"],
        usage_limits=_limits(max_total_tokens=boundary - 1),
    )
    kind, message = _error(await over.result())
    assert kind == "usage_limit_exceeded"
    assert f"max_total_tokens is {boundary - 1:,}: {used:,} tokens were used" in message
    assert f"estimated at {estimate:,} tokens" in message
    assert len(await llm_inputs(over)) == 1

    exact = await start_run(
        client,
        task_queue,
        TOOL_THEN_ANSWER,
        tools=["calculator"],
        usage_limits=_limits(max_total_tokens=boundary),
    )
    assert (await exact.result()).status == "completed"


async def test_an_agent_tools_usage_counts_toward_the_callers_limit(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("researcher", {"query": "find it"}, "a1")]), turn("It is 42.")]
    handle = await start_run(
        client, task_queue, script, agents=[{"name": "researcher"}], usage_limits=_limits(max_llm_calls=2)
    )
    result = await handle.result()
    kind, message = _error(result)
    assert kind == "usage_limit_exceeded" and "2 LLM calls were made already" in message
    assert len(await llm_inputs(handle)) == 1  # the caller's one call; the researcher's was the second
    assert result.outcome.usage.llm_calls == 2


# ---- cost ------------------------------------------------------------------------------------


async def test_a_priced_model_records_cost_and_max_cost_stops_the_next_call(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-usage-limits")
    async with FakeOpenAI(default=chat_completion("It is 42.")) as server:
        server.reply(chat_completion(tool_calls=[tool_call("calculator", '{"expression": "6 * 7"}', "c1")]))
        config = AgentConfig.model_validate(
            {
                "model": "openai/gpt-4o-mini",
                "tools": ["calculator"],
                "model_settings": {"extra": {"api_base": server.base_url}},
                "usage_limits": _limits(max_cost_usd=0.000005),
            }
        )
        handle = await client.start_workflow(
            "ReActRun",
            {"query": "What is 6 * 7?", "config": config.model_dump(mode="json")},
            id=f"test-cost-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=RunResult,
        )
        result = await handle.result()
    cost = 11 * 0.15e-6 + 7 * 0.6e-6  # gpt-4o-mini's bundled price; the fake server reports 11 + 7 tokens
    assert abs(result.outcome.usage.cost_usd - cost) < 1e-12
    assert result.outcome.usage.unpriced_calls == 0
    kind, message = _error(result)
    assert kind == "usage_limit_exceeded" and "max_cost_usd is 5e-06: $0.000006 was spent already" in message
    assert len(server.requests) == 1


# ---- per session -----------------------------------------------------------------------------


def _session_config(**per_session: Any) -> AgentConfig:
    return AgentConfig.model_validate(
        {"model": "scripted", "tools": ["calculator"], "usage_limits": {"per_session": per_session}}
    )


async def _ask(
    client: Client,
    task_queue: str,
    session_id: str,
    config: AgentConfig,
    turns: list[ScriptTurn],
    **overrides: Any,
) -> RequestResult:
    script: list[JsonValue] = [t.model_dump(mode="json", exclude_defaults=True) for t in turns]
    return await sessions.ask_sync(
        client,
        session_id,
        AskInput(query="What is 6 * 7?", overrides={"script": script, **overrides}),
        agent_id="limits-agent",
        config=config,
        task_queue=task_queue,
    )


async def test_per_session_limits_count_every_request_of_the_session(client: Client, task_queue: str) -> None:
    session_id = new_session_id()
    config = _session_config(max_llm_calls=3)
    first = await _ask(client, task_queue, session_id, config, TOOL_THEN_ANSWER)
    assert first.outcome.status == "completed" and first.outcome.usage.llm_calls == 2
    second = await _ask(client, task_queue, session_id, config, TOOL_THEN_ANSWER)
    kind, message = _error(second)
    assert kind == "usage_limit_exceeded"
    assert "usage_limits.per_session.max_llm_calls is 3: 3 LLM calls were made already" in message
    assert second.outcome.usage.llm_calls == 1  # its first call fitted, its second did not
    # a fresh session starts from nothing
    other = await _ask(client, task_queue, new_session_id(), config, TOOL_THEN_ANSWER)
    assert other.outcome.status == "completed"


async def test_a_sessions_usage_is_carried_across_continue_as_new(client: Client, task_queue: str) -> None:
    session_id = new_session_id()
    config = AgentConfig(model="scripted")
    first_run = None
    asks = 0
    for _ in range(40):  # the tests' server suggests continuing as new after 120 history events
        result = await _ask(client, task_queue, session_id, config, [turn("42")])
        assert result.outcome.status == "completed"
        asks += 1
        description = await client.get_workflow_handle(session_id).describe()
        first_run = first_run or description.run_id
        if description.run_id != first_run:
            break
    else:
        pytest.fail("the session never continued as new")
    refused = await _ask(
        client,
        task_queue,
        session_id,
        config,
        [turn("42")],
        usage_limits={"per_session": {"max_llm_calls": asks}},
    )
    kind, message = _error(refused)
    assert kind == "usage_limit_exceeded" and f"{asks} LLM calls were made already" in message
    allowed = await _ask(
        client,
        task_queue,
        session_id,
        config,
        [turn("42")],
        usage_limits={"per_session": {"max_llm_calls": asks + 2}},
    )
    assert allowed.outcome.status == "completed"


# ---- bad limits ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "budget", [{"max_llm_calls": 0}, {"max_total_tokens": -5}, {"max_cost_usd": 0}, {"max_cost_usd": -1.0}]
)
def test_zero_and_negative_limits_are_refused_by_the_models(budget: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        UsageBudget.model_validate(budget)


async def test_a_run_with_a_negative_limit_fails_invalid_input_before_any_call(
    client: Client, task_queue: str
) -> None:
    raw = {
        "query": "hi",
        "config": {"model": "scripted", "usage_limits": {"per_request": {"max_llm_calls": -1}}},
    }
    handle = await client.start_workflow(
        "ReActRun", raw, id=f"test-bad-limit-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), timeout=30)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "invalid_input"
    assert "max_llm_calls" in cause.message
    assert not await llm_inputs(handle)


async def test_an_ask_with_a_zero_limit_is_refused_and_starts_nothing(
    client: Client, task_queue: str
) -> None:
    session_id = new_session_id()
    config = AgentConfig(model="scripted")
    await _ask(client, task_queue, session_id, config, [turn("42")])
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await _ask(
            client,
            task_queue,
            session_id,
            config,
            [turn("42")],
            usage_limits={"per_session": {"max_cost_usd": 0}},
        )
    cause = refused.value.cause
    assert (
        isinstance(cause, ApplicationError)
        and cause.type == "invalid_input"
        and "max_cost_usd" in cause.message
    )
    records = await client.get_workflow_handle(session_id).query("requests")
    assert len(records) == 1  # the refused ask left no request behind
