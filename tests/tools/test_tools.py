"""The tool activities, run for real in the SDK's `ActivityEnvironment` (the registry has its own tests)."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest
from pydantic import JsonValue
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import ToolActivities
from contracts import ResolveToolsRequest, ToolCallRequest, ToolOutcome
from contracts.activities import tool_activity_summary
from contracts.tools import MAX_RESULT_CHARS
from conversation import ToolCall
from tests.example_tools import registry

ACTIVITIES = ToolActivities(registry())


async def run_tool(
    name: str, arguments: str, *, attempt: int = 1, tool_context: dict[str, JsonValue] | None = None
) -> ToolOutcome:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    request = ToolCallRequest(
        call=ToolCall(id="call_1", name=name, arguments=arguments),
        tool_context=tool_context or {},
    )
    return await env.run(ACTIVITIES.run_tool, request)


async def tool_error(name: str, arguments: str) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await run_tool(name, arguments, attempt=2)
    return caught.value


# --- run_tool ----------------------------------------------------------------------------------


async def test_sync_and_async_tools() -> None:
    assert await run_tool("add", '{"a": 2, "b": 3}') == ToolOutcome(ok=True, result=5, attempts=1)
    outcome = await run_tool("where", "")
    assert outcome.ok and outcome.result != threading.current_thread().name  # ran in a worker thread


async def test_tool_context_is_injected_and_result_is_json() -> None:
    outcome = await run_tool(
        "search", '{"query": "q", "origin": {"x": 1, "y": 2}}', tool_context={"user": "ada"}, attempt=3
    )
    assert outcome.ok and outcome.attempts == 3
    assert outcome.result == {
        "query": "q",
        "limit": 5,
        "mode": "fast",
        "tags": None,
        "origin": {"x": 1, "y": 2},
        "ctx": {"user": "ada"},
    }


async def test_unknown_tool_is_an_error_result() -> None:
    outcome = await run_tool("nope", "{}")
    assert not outcome.ok and outcome.error is not None
    assert outcome.error.type == "unknown_tool"
    assert not outcome.error.retryable
    assert "'nope'" in outcome.error.message and "add, big, fails" in outcome.error.message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1 "b": 2}', "arguments are not valid JSON: Expecting ',' delimiter at char 8"),
        ("[1, 2]", "arguments must be a JSON object, not list"),
        ('{"a": "one", "b": 2}', "a: Input should be a valid integer"),
        ('{"a": 1}', "b: Field required"),
        ('{"a": 1, "b": 2, "c": 3}', "c: Extra inputs are not permitted"),
    ],
)
async def test_invalid_arguments(arguments: str, expected: str) -> None:
    outcome = await run_tool("add", arguments)
    assert outcome.error is not None
    assert outcome.error.type == "invalid_arguments"
    assert expected in outcome.error.message


async def test_invalid_arguments_name_the_fields() -> None:
    outcome = await run_tool("add", '{"a": "x", "b": "y"}')
    assert outcome.error is not None and outcome.error.details == {"fields": ["a", "b"]}


async def test_tool_failure_is_an_error_result() -> None:
    outcome = await run_tool("fails", '{"kind": "expected"}')
    assert outcome.error is not None
    assert outcome.error.model_dump() == {
        "type": "tool_error",
        "message": "no such city",
        "details": {"city": "Atlantis"},
        "retryable": False,
    }
    typed = await run_tool("fails", '{"kind": "typed"}')
    assert typed.error is not None and typed.error.type == "quota_exceeded"


async def test_retryable_failure_and_crash_raise_retryable_errors() -> None:
    retryable = await tool_error("fails", '{"kind": "retryable"}')
    assert (retryable.type, retryable.non_retryable, retryable.message) == (
        "tool_error",
        False,
        "backend busy",
    )
    assert retryable.details == ({"attempt": 2, "exception": "ToolFailure"},)
    crash = await tool_error("fails", '{"kind": "crash"}')
    assert (crash.type, crash.non_retryable, crash.message) == ("tool_error", False, "tool crashed")
    assert crash.details == ({"attempt": 2, "exception": "RuntimeError"},)


async def test_oversized_result_is_truncated() -> None:
    small = await run_tool("big", '{"size": 100}')
    assert small.result == "x" * 100
    outcome = await run_tool("big", '{"size": 200000}')
    assert outcome.ok and isinstance(outcome.result, str)
    full = len(json.dumps("x" * 200000))
    assert outcome.result.startswith('"xxx')
    assert outcome.result.endswith(f"…[truncated: {full - MAX_RESULT_CHARS} more characters]")
    assert len(outcome.result) < MAX_RESULT_CHARS + 100


async def test_unserializable_result_is_an_error_result() -> None:
    outcome = await run_tool("not_json", "{}")
    assert outcome.error is not None and outcome.error.type == "invalid_result"


def test_tool_summary() -> None:
    request = ToolCallRequest(call=ToolCall(id="c9", name="add"))
    assert tool_activity_summary(request) == "tool add c9"


# --- resolve_tools -----------------------------------------------------------------------------


async def test_resolve_tools() -> None:
    specs = await ActivityEnvironment().run(
        ACTIVITIES.resolve_tools, ResolveToolsRequest(names=["add", "big"])
    )
    assert [spec.name for spec in specs] == ["add", "big"]


async def test_resolve_unknown_tools_is_non_retryable() -> None:
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(
            ACTIVITIES.resolve_tools, ResolveToolsRequest(names=["add", "web_search", "shell"])
        )
    error = caught.value
    assert (error.type, error.non_retryable) == ("unknown_tool", True)
    assert "'web_search', 'shell'" in error.message and "available tools: add, big" in error.message
