"""Agents that remember: the memory tools and recall, through real sessions, a real worker and store.

Each principal's threads are sessions `gw/<principal>/<agent>/<thread>` (the gateway's ids); the
worker's store is the test session's SQLite file (`REACT_STORE_URL`, tests/conftest.py), or a real
PostgreSQL server's database for the PostgreSQL run of the same story.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from activities.tools.tool_registry import ToolRegistry
from contracts import Trace
from contracts.memory import MemoryConfig
from contracts.session import RequestResult
from store import open_store
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.helpers import llm_inputs
from tests.postgres_server import fresh_database

MEMORY = {"tools": True, "recall": 3}


def thread(principal: str, agent: str = "assistant") -> str:
    return f"gw/{principal}/{agent}/t-{uuid.uuid4().hex[:10]}"


async def ask(
    env: AgentTestEnvironment, session_id: str, query: str, *turns: Any, **memory: Any
) -> RequestResult:
    config = scripted_agent(*turns, memory={**MEMORY, **memory})
    handle = env.sessions.get(session_id)
    accepted = await handle.ask(query, config=config, agent_id=session_id.split("/")[2])
    result = await handle.await_result(accepted.request_id)
    assert result.status == "completed", result
    return result


async def trace_of(env: AgentTestEnvironment, result: RequestResult) -> Trace:
    assert result.run_workflow_id is not None
    return await env.runs.get(result.run_workflow_id).trace()


def recalled(trace: Trace) -> list[dict[str, Any]]:
    return [event.data for event in trace.events if event.kind == "memory_recalled"]


def tool_results(trace: Trace) -> list[dict[str, Any]]:
    return [json.loads(str(e.data["outcome"])) for e in trace.events if e.kind == "tool_completed"]


@pytest_asyncio.fixture(scope="module", params=["sqlite", "postgres"])
async def remembering(
    request: pytest.FixtureRequest, agents: AgentTestEnvironment
) -> AsyncIterator[AgentTestEnvironment]:
    """The tests' worker (SQLite), or a worker of its own on a PostgreSQL database."""
    if request.param == "sqlite":
        yield agents
        return
    url = fresh_database(request.getfixturevalue("postgres_url"), f"agents_{uuid.uuid4().hex[:8]}")
    async with AgentTestEnvironment(registry=ToolRegistry(), memory_store_url=url) as env:
        yield env


async def test_a_preference_told_in_one_thread_is_recalled_and_found_in_another(
    remembering: AgentTestEnvironment,
) -> None:
    env = remembering
    principal = f"p{uuid.uuid4().hex[:8]}"
    save = tool_call("memory_save", {"text": "The user prefers green tea, never coffee", "key": "drink"})
    told = await ask(
        env, thread(principal), "Remember: I prefer green tea.", call_tools(save), answer("Noted.")
    )
    assert tool_results(await trace_of(env, told)) == [{"ok": True, "result": {"saved": "drink"}}]

    search = tool_call("memory_search", {"query": "which drink"})
    other = await ask(
        env, thread(principal), "What should I drink?", call_tools(search), answer("Green tea.")
    )
    trace = await trace_of(env, other)
    assert recalled(trace) == [{"keys": ["drink"]}]
    first_call = (await llm_inputs(env.client.get_workflow_handle(other.run_workflow_id or "")))[0]
    contents = [m["content"] for m in first_call["messages"]]
    assert contents[-2] == "What should I drink?"
    assert "[drink] The user prefers green tea, never coffee" in contents[-1]
    found = tool_results(trace)[0]["result"]["items"]
    assert found[0]["key"] == "drink" and "green tea" in found[0]["text"]

    # Another principal's agent of the same name remembers nothing of it.
    stranger = await ask(env, thread(f"q{principal}"), "What should I drink?", answer("No idea."))
    assert recalled(await trace_of(env, stranger)) == [{"keys": []}]

    # Forgotten when asked: a later thread recalls nothing.
    forget = tool_call("memory_delete", {"key": "drink"})
    gone = await ask(env, thread(principal), "Forget my drink.", call_tools(forget), answer("Forgotten."))
    assert tool_results(await trace_of(env, gone))[0]["result"] == {"deleted": True, "key": "drink"}
    after = await ask(env, thread(principal), "What should I drink?", answer("No idea."))
    assert recalled(await trace_of(env, after)) == [{"keys": []}]


async def test_two_agents_share_a_namespace_and_recall_zero_is_off(agents: AgentTestEnvironment) -> None:
    principal = f"p{uuid.uuid4().hex[:8]}"
    save = tool_call("memory_save", {"text": "Project deadline is Friday"})
    await ask(
        agents,
        thread(principal, "planner"),
        "Deadline Friday.",
        call_tools(save),
        answer("Ok."),
        namespace="team",
    )
    shared = await ask(
        agents, thread(principal, "writer"), "When is the deadline?", answer("Friday."), namespace="team"
    )
    keys = recalled(await trace_of(agents, shared))[0]["keys"]
    assert len(keys) == 1 and keys[0].startswith("m-")
    off = await ask(
        agents, thread(principal, "writer"), "When is the deadline?", answer("?"), namespace="team", recall=0
    )
    assert recalled(await trace_of(agents, off)) == []
    async with open_store() as store:
        assert await store.count((principal, "team")) == 1
        assert await store.count((principal, "planner")) == 0


async def test_bad_arguments_and_a_store_that_is_down_are_tool_errors_not_failed_runs() -> None:
    bad = tool_call("memory_save", {"text": ""})
    down = tool_call("memory_search", {"query": "anything"})
    async with AgentTestEnvironment(
        registry=ToolRegistry(), memory_store_url="postgresql://postgres@127.0.0.1:1/postgres"
    ) as env:
        result = await ask(env, thread("alice"), "Hi", call_tools(bad, down), answer("Sorry."))
        trace = await trace_of(env, result)
    assert result.result == "Sorry."
    assert recalled(trace)[0]["keys"] == [] and "unavailable" in recalled(trace)[0]["problem"]
    invalid, unavailable = tool_results(trace)
    assert invalid["ok"] is False and invalid["error"]["type"] == "invalid_arguments"
    assert "text" in invalid["error"]["message"]
    assert unavailable["ok"] is False and unavailable["error"]["type"] == "unavailable"
    assert unavailable["error"]["retryable"] is True


def test_memory_config_is_bounded() -> None:
    assert MemoryConfig().recall == 3
    with pytest.raises(ValueError, match="recall"):
        MemoryConfig(recall=11)
    with pytest.raises(ValueError, match="namespace"):
        MemoryConfig(namespace="../x")
    with pytest.raises(ValueError, match="extra"):
        MemoryConfig.model_validate({"tool": True})
