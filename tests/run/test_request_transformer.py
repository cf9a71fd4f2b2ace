"""The request transformer: a function on the worker that changes the next LLM request (real server)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.llm.request_transformers import (
    TRANSFORMERS_ENV,
    RequestTransformers,
    TransformRequestActivity,
)
from activities.tools.tool_loading import ToolLoadError
from contracts import RunResult
from contracts.agent import ModelSettings
from contracts.transform import RequestChanges, TransformInput
from conversation import Message
from tests.agent_tools import registry_for_tests
from tests.fake_openai import FakeOpenAI, chat_completion
from tests.helpers import call, llm_inputs, start_run, trace_of, turn
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]
SEEN: list[TransformInput] = []
FAKE_BASE: list[str] = []  # the fake OpenAI server's api_base, while a test runs one


def tweak(request: TransformInput) -> RequestChanges:
    SEEN.append(request)
    return RequestChanges(
        settings=ModelSettings(temperature=0.9, max_tokens=123),
        system_prompt="Answer in one word.",
        tools=["calculator"],
        reason="narrow the tools, be terse",
    )


async def add_note(request: TransformInput) -> dict[str, Any]:
    note = Message(role="user", content=f"(note for call {request.llm_calls})")
    return {"messages": [*request.messages, note], "reason": "a note"}


def nothing(request: TransformInput) -> None:
    return None


def boom(request: TransformInput) -> RequestChanges:
    raise RuntimeError("the transformer broke; Authorization: Bearer sk-secret-123456789")


def not_changes(request: TransformInput) -> int:
    return 42


def grant(request: TransformInput) -> RequestChanges:
    return RequestChanges(tools=["calculator", "huge"])


def cheaper_second_call(request: TransformInput) -> RequestChanges | None:
    if request.llm_calls == 0:
        return None
    settings = ModelSettings(extra={"api_base": FAKE_BASE[0]})
    return RequestChanges(model="openai/gpt-4o-mini", settings=settings, reason="switch model")


def transformers() -> RequestTransformers:
    registered = RequestTransformers()
    for function in (tweak, add_note, nothing, boom, not_changes, grant, cheaper_second_call):
        registered.register(function.__name__, function)
    return registered


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def queue(client: Client) -> AsyncIterator[str]:
    """A worker with the test tools and the transformers above; its task queue."""
    name = f"transformers-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        client,
        task_queue=name,
        registry=registry_for_tests(),
        transformers=transformers(),
        max_cached_workflows=0,
    )
    async with worker:
        yield name


CALC = [turn(tool_calls=[call("calculator", {"expression": "6 * 7"}, "c1")]), turn("42")]


async def _failed(client: Client, queue: str, transformer: str) -> RunResult:
    handle = await start_run(
        client, queue, [turn("never")], tools=["calculator", "echo"], request_transformer=transformer
    )
    result = await handle.result()
    assert result.status == "failed"
    assert not await llm_inputs(handle)  # no LLM call was made
    return result


# ---- the registry ----------------------------------------------------------------------------


def test_transformers_register_by_tool_name_rules_once_each() -> None:
    registered = RequestTransformers()
    registered.register("ok_name-1", nothing)
    with pytest.raises(ValueError, match="already registered"):
        registered.register("ok_name-1", nothing)
    with pytest.raises(ValueError, match="must match"):
        registered.register("bad name", nothing)
    with pytest.raises(TypeError, match="must be a function"):
        registered.register("x", 42)  # pyright: ignore[reportArgumentType]
    assert registered.names() == ["ok_name-1"] and "ok_name-1" in registered
    assert isinstance(TransformRequestActivity(registered), TransformRequestActivity)


def test_a_transformers_flag_that_cannot_be_used_is_one_clear_line() -> None:
    from activities.llm.request_transformers import build_transformers

    with pytest.raises(ToolLoadError) as caught:
        build_transformers(["tests.run.test_request_transformer:nothing"])
    assert str(caught.value).startswith(
        "--transformers tests.run.test_request_transformer:nothing: 'nothing' is a"
    )
    with pytest.raises(ToolLoadError, match="no module named 'no_such_module_here'"):
        build_transformers(["no_such_module_here"])
    loaded = build_transformers(["tests.run.test_request_transformer:TRANSFORMERS"])
    assert "tweak" in loaded


TRANSFORMERS = transformers()


def test_the_worker_process_refuses_bad_transformers_with_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != TRANSFORMERS_ENV}
    command = [sys.executable, str(REPO / "worker.py"), "--address", "127.0.0.1:1"]
    done = subprocess.run(
        [*command, "--transformers", "tests.run.test_request_transformer:SEEN"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "worker: --transformers tests.run.test_request_transformer:SEEN: 'SEEN' is a list, not a "
        "RequestTransformers"
    ), done.stderr


# ---- changes reach the LLM call, and the trace says so ---------------------------------------


async def test_a_transformer_changes_settings_system_prompt_and_tools(client: Client, queue: str) -> None:
    SEEN.clear()
    handle = await start_run(
        client,
        queue,
        CALC,
        tools=["calculator", "echo"],
        system_prompt="Be kind.",
        request_transformer="tweak",
    )
    result = await handle.result()
    assert result.status == "completed" and result.answer == "42"
    inputs = await llm_inputs(handle)
    assert len(inputs) == 2
    for sent in inputs:
        assert sent["settings"]["temperature"] == 0.9 and sent["settings"]["max_tokens"] == 123
        assert sent["system_prompt"] == "Answer in one word."
        assert sent["tools"] == ["calculator"]
    # what the transformer saw: the run's progress and the untransformed request
    assert [(s.llm_calls, s.iteration, s.tools) for s in SEEN] == [
        (0, 1, ["calculator", "echo"]),
        (1, 2, ["calculator", "echo"]),
    ]
    assert SEEN[0].system_prompt == "Be kind." and SEEN[1].usage.llm_calls == 1
    assert [m.content for m in SEEN[0].messages] == ["What is 6 * 7?"]
    events = [e for e in (await trace_of(handle)).events if e.kind == "request_transformed"]
    assert [e.data["changed"] for e in events] == [["settings", "system_prompt", "tools"]] * 2
    assert events[0].data["reason"] == "narrow the tools, be terse" and events[0].data["tools"] == [
        "calculator"
    ]
    # a local activity: recorded as a marker, never scheduled on the task queue
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert sum(b"transform_request" in e.SerializeToString() for e in markers) == 2
    assert not any(
        e.activity_task_scheduled_event_attributes.activity_type.name == "transform_request"
        for e in history.events
    )


async def test_changed_messages_go_inline_and_the_thread_keeps_its_own(client: Client, queue: str) -> None:
    handle = await start_run(client, queue, CALC, tools=["calculator"], request_transformer="add_note")
    result = await handle.result()
    assert result.status == "completed"
    first, second = await llm_inputs(handle)
    assert [m["content"] for m in first["messages"]] == ["What is 6 * 7?", "(note for call 0)"]
    assert "prefix" not in second and all("ref" not in m for m in second["messages"])
    assert second["messages"][-1]["content"] == "(note for call 1)"
    assert all("note for call" not in str(e.payload) for e in result.entries)  # the request only
    events = [e for e in (await trace_of(handle)).events if e.kind == "request_transformed"]
    assert [(e.data["changed"], e.data["messages"]) for e in events] == [(["messages"], 2), (["messages"], 4)]


async def test_no_change_records_nothing(client: Client, queue: str) -> None:
    handle = await start_run(client, queue, CALC, tools=["calculator"], request_transformer="nothing")
    assert (await handle.result()).status == "completed"
    assert not [e for e in (await trace_of(handle)).events if e.kind == "request_transformed"]
    assert [sent["model"] for sent in await llm_inputs(handle)] == ["scripted", "scripted"]


async def test_a_transformer_switches_the_model_and_the_priced_call_has_a_cost(
    client: Client, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-transformer")
    async with FakeOpenAI(default=chat_completion("It is 42.")) as server:
        FAKE_BASE[:] = [server.base_url]
        handle = await start_run(
            client, queue, CALC, tools=["calculator"], request_transformer="cheaper_second_call"
        )
        result = await handle.result()
    assert result.status == "completed" and result.answer == "It is 42."
    assert [sent["model"] for sent in await llm_inputs(handle)] == ["scripted", "openai/gpt-4o-mini"]
    assert server.requests[0].body["model"] == "gpt-4o-mini"
    usage = result.outcome.usage
    assert usage.unpriced_calls == 1  # the scripted call
    assert abs(usage.cost_usd - (11 * 0.15e-6 + 7 * 0.6e-6)) < 1e-12  # gpt-4o-mini's price, 11 + 7 tokens
    [event] = [e for e in (await trace_of(handle)).events if e.kind == "request_transformed"]
    assert event.data["changed"] == ["model", "settings"] and event.data["model"] == "openai/gpt-4o-mini"


# ---- failures end the run by name -------------------------------------------------------------


async def test_a_transformer_that_raises_fails_the_run_redacted(client: Client, queue: str) -> None:
    result = await _failed(client, queue, "boom")
    assert result.outcome.error is not None
    assert result.outcome.error.type == "transformer_error"
    assert "RuntimeError: the transformer broke" in result.outcome.error.message
    assert "sk-secret-123456789" not in result.outcome.error.message


async def test_an_answer_that_is_not_changes_fails_the_run(client: Client, queue: str) -> None:
    result = await _failed(client, queue, "not_changes")
    assert result.outcome.error is not None and result.outcome.error.type == "transformer_error"
    assert "returned a int" in result.outcome.error.message


async def test_offering_a_tool_outside_the_config_fails_the_run(client: Client, queue: str) -> None:
    result = await _failed(client, queue, "grant")
    assert result.outcome.error is not None and result.outcome.error.type == "transformer_error"
    assert "'huge'" in result.outcome.error.message


async def test_an_unknown_transformer_fails_the_run_naming_the_registered_ones(
    client: Client, queue: str
) -> None:
    result = await _failed(client, queue, "no_such_transformer")
    assert result.outcome.error is not None and result.outcome.error.type == "unknown_transformer"
    assert "'no_such_transformer'" in result.outcome.error.message and "tweak" in result.outcome.error.message
