"""Structured output: a run's final answer must match `config.output`'s JSON Schema.

Runs against the real dev server and worker with the scripted model: the answer is parsed
JSON-first, then extracted (fences, prose); an invalid one gets repair calls that show the
model the errors, then the run fails with `invalid_output`; an invalid schema fails the run
with `invalid_schema` before any LLM call. Native structured output reaches the (fake)
provider as `response_format` only for models litellm marks as supporting it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from clients.errors import RejectedError
from clients.output import output_as, output_spec
from contracts import WORKFLOW_TYPE, AgentConfig, ModelSettings, RunInput, RunResult
from contracts.errors import INVALID_OUTPUT, INVALID_SCHEMA
from contracts.output import OutputSpec
from contracts.signals import SteerInput
from payloads.blob_store import BlobStore
from testing import AgentTestEnvironment, answer, script_overrides, scripted_agent
from tests.fake_openai import FakeOpenAI, chat_completion
from tests.helpers import llm_inputs, start_run, trace_of, update
from tests.llm_gate import answer_llm_call, held, held_llm_call

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}
PARIS: dict[str, Any] = {"city": "Paris", "population": 2_100_000}


class City(BaseModel):
    city: str
    population: int


async def _scheduled(handle: WorkflowHandle[Any, Any]) -> list[str]:
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def _kinds(handle: WorkflowHandle[Any, RunResult]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (event.kind, dict(event.data))
        for event in (await trace_of(handle)).events
        if event.kind in ("output_parsed", "output_invalid")
    ]


async def _run(
    client: Client, task_queue: str, *answers: str, **output: Any
) -> WorkflowHandle[Any, RunResult]:
    spec = {"json_schema": SCHEMA, **output}
    return await start_run(client, task_queue, [answer(a) for a in answers], output=spec)


@pytest.mark.parametrize(
    ("text", "method"),
    [
        (json.dumps(PARIS), "json"),
        (f"Here it is:\n```json\n{json.dumps(PARIS)}\n```\nAnything else?", "extracted"),
        (f"The capital {{of France}} is {json.dumps(PARIS)}, as you asked.", "extracted"),
    ],
    ids=["json", "fenced", "prose"],
)
async def test_a_valid_answer_is_the_runs_output(
    client: Client, task_queue: str, text: str, method: str
) -> None:
    handle = await _run(client, task_queue, text)
    result = await handle.result()
    assert result.status == "completed"
    assert result.output == PARIS and result.answer == text
    assert await _kinds(handle) == [("output_parsed", {"method": method})]
    # The schema was checked once, before the one LLM call, and every request carried the spec.
    assert await _scheduled(handle) == ["check_output_schema", "llm_call"]
    assert [i["output"]["json_schema"] for i in await llm_inputs(handle)] == [SCHEMA]


async def test_one_repair_shows_the_model_the_errors(client: Client, task_queue: str) -> None:
    bad = json.dumps({"city": "Paris", "population": "two million"})
    handle = await _run(client, task_queue, bad, json.dumps(PARIS))
    result = await handle.result()
    assert result.status == "completed" and result.output == PARIS
    assert result.outcome.usage.llm_calls == 2 and result.outcome.iterations == 2
    (invalid, invalid_data), (parsed, _) = await _kinds(handle)
    assert (invalid, parsed) == ("output_invalid", "output_parsed")
    assert invalid_data["repair"] == 1 and invalid_data["repairs"] == 1
    assert invalid_data["errors"] == ["$.population: 'two million' is not of type 'integer'"]
    # The second call saw the repair request: the errors, and the ask for only the JSON.
    second = (await llm_inputs(handle))[1]
    repair = second["messages"][-1]
    assert repair["role"] == "user"
    assert "$.population: 'two million' is not of type 'integer'" in repair["content"]
    assert "only the corrected JSON" in repair["content"]
    repair_entries = [e for e in result.entries if e.refs.get("source") == "output_repair"]
    assert len(repair_entries) == 1


async def test_repairs_exhausted_fail_the_run_with_the_last_errors(client: Client, task_queue: str) -> None:
    handle = await _run(client, task_queue, "Paris, about two million people.", json.dumps({"city": 7}))
    result = await handle.result()
    assert result.status == "failed" and result.output is None
    error = result.outcome.error
    assert error is not None and error.type == INVALID_OUTPUT
    # The last answer's errors, not the first's.
    assert "$.city: 7 is not of type 'string'" in error.message
    assert "'population' is a required property" in error.message
    assert "not JSON" not in error.message
    assert result.outcome.usage.llm_calls == 2
    kinds = await _kinds(handle)
    assert [(kind, data["repair"]) for kind, data in kinds] == [
        ("output_invalid", 1),
        ("output_invalid", None),
    ]
    with pytest.raises(RejectedError) as caught:
        output_as(result, City)
    assert caught.value.code == INVALID_OUTPUT


async def test_no_repairs_fail_at_the_first_invalid_answer(client: Client, task_queue: str) -> None:
    handle = await _run(client, task_queue, "no JSON here", json.dumps(PARIS), repairs=0)
    result = await handle.result()
    assert result.status == "failed" and result.outcome.error is not None
    assert result.outcome.error.type == INVALID_OUTPUT
    assert "not JSON" in result.outcome.error.message
    assert result.outcome.usage.llm_calls == 1


async def test_no_iteration_left_for_a_repair_fails_the_run(client: Client, task_queue: str) -> None:
    spec = {"json_schema": SCHEMA}
    handle = await start_run(
        client, task_queue, [answer("nope"), answer(json.dumps(PARIS))], output=spec, max_iterations=1
    )
    result = await handle.result()
    assert result.outcome.error is not None and result.outcome.error.type == INVALID_OUTPUT
    assert "no iteration left" in result.outcome.error.message


async def test_an_invalid_schema_fails_the_run_before_any_llm_call(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [answer("{}")], output={"json_schema": {"type": "objekt"}})
    with pytest.raises(Exception) as caught:
        await handle.result()
    cause = getattr(caught.value, "cause", None)
    assert getattr(cause, "type", None) == INVALID_SCHEMA and getattr(cause, "non_retryable", False)
    assert "$.type" in str(cause)
    assert await _scheduled(handle) == ["check_output_schema"]


async def test_a_steer_at_the_final_answer_continues_before_the_check(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    handle = await start_run(
        client, task_queue, [held(), answer(json.dumps(PARIS))], output={"json_schema": SCHEMA}
    )
    await held_llm_call(client, store, handle.id)
    ack = await update(handle, "steer", SteerInput(content="Answer as JSON, please."))
    assert ack.status == "queued"
    # The held call's invalid answer arrives only now, with the steer queued.
    await answer_llm_call(client, store, handle.id, "still thinking")
    result = await handle.result()
    assert result.status == "completed" and result.output == PARIS
    # The answer the steer superseded was not checked: no output_invalid, no repair.
    assert await _kinds(handle) == [("output_parsed", {"method": "json"})]
    assert not [e for e in result.entries if e.refs.get("source") == "output_repair"]


async def test_a_run_without_output_issues_no_output_commands(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [answer(json.dumps(PARIS))])
    result = await handle.result()
    assert result.output is None
    assert await _scheduled(handle) == ["llm_call"]
    assert "output" not in (await llm_inputs(handle))[0]


async def test_the_typed_client_takes_a_pydantic_model(agents: AgentTestEnvironment) -> None:
    config = scripted_agent(answer(f"```\n{json.dumps(PARIS)}\n```"))
    result = await agents.runs.run("The capital of France?", config, output=City)
    assert output_as(result, City) == City(**PARIS)
    assert output_spec(City).name == "City" and output_spec(City).json_schema == City.model_json_schema()
    with pytest.raises(RejectedError) as caught:
        await agents.runs.run("x", config, output={"type": 3})
    assert caught.value.code == INVALID_SCHEMA


async def _provider_run(
    client: Client, task_queue: str, server: FakeOpenAI, model: str, **output: Any
) -> RunResult:
    server.reply(chat_completion(json.dumps(PARIS)))
    run = RunInput(
        query="The capital of France?",
        config=AgentConfig(
            model=model,
            model_settings=ModelSettings(extra={"api_base": server.base_url}),
            output=OutputSpec.model_validate({"json_schema": SCHEMA, "name": "city", **output}),
        ),
    )
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        run,
        id=f"test-output-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        result_type=RunResult,
    )
    return await handle.result()


async def test_native_structured_output_reaches_supporting_models_only(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-output")
    async with FakeOpenAI() as server:
        supported = await _provider_run(client, task_queue, server, "openai/gpt-4o-mini")
        unsupported = await _provider_run(client, task_queue, server, "openai/my-local-model")
        turned_off = await _provider_run(client, task_queue, server, "openai/gpt-4o-mini", native=False)
    assert supported.output == unsupported.output == turned_off.output == PARIS
    first, second, third = (seen.body for seen in server.requests)
    assert first["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city", "schema": SCHEMA, "strict": False},
    }
    assert "response_format" not in second and "response_format" not in third


async def test_a_session_ask_asks_it_of_that_request_only(agents: AgentTestEnvironment) -> None:
    session = agents.sessions.get(f"output-session-{uuid.uuid4().hex[:8]}")
    config = scripted_agent(answer(f"It is {json.dumps(PARIS)}."))
    accepted = await session.ask("The capital of France?", config=config, output=City)
    record = await session.await_result(accepted.request_id)
    result = await agents.runs.get(accepted.run_workflow_id).result()
    assert record.status == "completed" and output_as(result, City) == City(**PARIS)
    plain = await session.ask_sync("And Spain?", overrides=script_overrides(answer("Madrid.")))
    assert plain.status == "completed" and plain.result == "Madrid."
    bad = await session.ask_sync("Again?", overrides={"output": {"json_schema": {"type": "objekt"}}})
    assert bad.status == "failed" and bad.outcome.error is not None
    assert bad.outcome.error.type == INVALID_SCHEMA
