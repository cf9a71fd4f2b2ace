"""The worker's side of approvals: the `requires_approval` flag, argument checks, inline tool specs.

Registry and MCP config rules are unit tests; everything an activity does runs on a real
worker (real dev server), reached through the `ActivityProbe` workflow, with the scripted
model or the fake OpenAI server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from activities.tools.mcp_config import McpConfigError, parse_mcp_config
from activities.tools.mcp_tools import mcp_tools
from activities.tools.tool_registry import ToolRegistry
from contracts import LLMRequest, ModelSettings, ScriptedCall
from contracts.approval import ArgumentsCheck, ArgumentsVerdict
from contracts.llm import LLMResponse, ToolSpec
from conversation import Message
from tests.activity_probe import ActivityProbe, call_activity
from tests.fake_openai import FakeOpenAI, chat_completion, tool_call
from tests.helpers import call, turn
from tests.mcp_servers.harness import stdio_server
from worker import build_worker

DELETE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}},
    "required": ["path"],
    "additionalProperties": False,
}
AGENT_SPEC = ToolSpec(
    name="researcher",
    description="Ask the researcher agent",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def send_email(to: str, subject: str, body: str = "") -> str:
    """Send an email.

    Args:
        to: the address.
        subject: the subject line.
        body: the text.
    """
    return f"sent to {to}"


def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo.
    """
    return text


async def delete_file(arguments: dict[str, Any]) -> str:
    """A schema tool, like an MCP server's."""
    return f"deleted {arguments['path']}"


def approval_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(requires_approval=True)(send_email)
    registry.register(echo, local=True)
    registry.register_schema(
        delete_file,
        name="delete_file",
        description="Delete a file",
        parameters=DELETE_SCHEMA,
        requires_approval=True,
    )
    return registry


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def queue(client: Client) -> AsyncIterator[str]:
    """A worker with the approval registry and the probe workflow; its task queue."""
    name = f"approval-registry-{uuid.uuid4().hex[:8]}"
    async with build_worker(
        client,
        task_queue=name,
        registry=approval_registry(),
        workflows=[ActivityProbe],
        max_cached_workflows=0,
    ):
        yield name


async def activity_failure(client: Client, queue: str, name: str, argument: Any) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as caught:
        await call_activity(client, queue, name, argument)
    activity_error = caught.value.cause
    assert isinstance(activity_error, ActivityError)
    error = activity_error.cause
    assert isinstance(error, ApplicationError)
    return error


# ---- the flag ------------------------------------------------------------------------------


def test_the_flag_is_kept_per_tool_and_survives_include() -> None:
    registry = approval_registry()
    assert [registry.requires_approval(name) for name in ("send_email", "echo", "delete_file", "nope")] == [
        True,
        False,
        True,
        False,
    ]
    merged = ToolRegistry()
    merged.include(registry)
    assert [name for name in merged.names() if merged.requires_approval(name)] == [
        "delete_file",
        "send_email",
    ]
    assert merged.is_local("echo") and not merged.is_local("send_email")


async def test_llm_call_names_the_called_tools_that_need_approval(client: Client, queue: str) -> None:
    calls = [call("send_email", {"to": "a@b.c", "subject": "hi"}), call("echo", {"text": "x"})]
    calls.append(call("delete_file", {"path": "/tmp/x"}))
    script_turn = turn(tool_calls=calls)
    request = LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="Tidy up and tell Bob")],
        tools=["send_email", "echo", "delete_file"],
        scripted=ScriptedCall(index=0, length=1, turn=script_turn),
    )
    raw = await call_activity(client, queue, "llm_call", request.model_dump(mode="json"))
    response = LLMResponse.model_validate(raw)
    assert [c.name for c in response.tool_calls] == ["send_email", "echo", "delete_file"]
    assert response.approval_tools == ["delete_file", "send_email"]
    assert response.local_tools == ["echo"]


async def test_an_inline_spec_named_like_a_tool_is_refused(client: Client, queue: str) -> None:
    clash = ToolSpec(name="echo", description="an agent named like a tool")
    request = LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="hi")],
        tools=["echo"],
        tool_specs=[clash],
        scripted=ScriptedCall(index=0, length=1, turn=turn("hello")),
    )
    error = await activity_failure(client, queue, "llm_call", request.model_dump(mode="json"))
    assert (error.type, error.non_retryable) == ("invalid_input", True)
    assert "'echo'" in error.message


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/test-model"])
async def test_inline_specs_reach_the_model_after_the_registry_specs(
    client: Client, queue: str, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct OpenAI route and `litellm.acompletion` both send `tools` then `tool_specs`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-approval")
    async with FakeOpenAI() as server:
        server.reply(chat_completion(tool_calls=[tool_call("researcher", '{"query": "q"}', "call_r")]))
        request = LLMRequest(
            model=model,
            messages=[Message(role="user", content="Research this")],
            tools=["send_email"],
            tool_specs=[AGENT_SPEC],
            settings=ModelSettings(extra={"api_base": server.base_url}),
            timeout_s=20,
        )
        raw = await call_activity(client, queue, "llm_call", request.model_dump(mode="json"))
    [seen] = server.requests
    sent = [(t["function"]["name"], t["function"]["parameters"]) for t in seen.body["tools"]]
    assert [name for name, _ in sent] == ["send_email", "researcher"]
    assert sent[1][1] == AGENT_SPEC.parameters
    response = LLMResponse.model_validate(raw)
    assert [c.name for c in response.tool_calls] == ["researcher"]
    assert response.approval_tools == []  # an agent tool is never the registry's tool


# ---- checking edited arguments ---------------------------------------------------------------


def test_check_arguments_of_a_python_tool_names_the_failing_fields() -> None:
    registry = approval_registry()
    assert registry.check_arguments("send_email", {"to": "a@b.c", "subject": "hi"}) == ArgumentsVerdict()
    verdict = registry.check_arguments("send_email", {"to": 7, "cc": "x"})
    assert verdict.fields == ["cc", "subject", "to"]
    assert verdict.problem is not None and "subject: Field required" in verdict.problem


def test_check_arguments_of_a_schema_tool_names_the_failing_fields() -> None:
    registry = approval_registry()
    assert registry.check_arguments("delete_file", {"path": "/tmp/x", "recursive": True}).problem is None
    verdict = registry.check_arguments("delete_file", {"recursive": "yes", "force": True})
    assert verdict.fields == ["force", "path", "recursive"]
    assert verdict.problem is not None and "'path' is a required property" in verdict.problem


def test_check_arguments_of_an_unknown_tool_names_it() -> None:
    verdict = approval_registry().check_arguments("format_disk", {})
    assert verdict.problem == "unknown tool 'format_disk'; available tools: delete_file, echo, send_email"


async def test_the_check_activity_answers_on_a_real_worker(client: Client, queue: str) -> None:
    good = ArgumentsCheck(name="delete_file", arguments={"path": "/tmp/y"})
    bad = ArgumentsCheck(name="send_email", arguments={"to": "a@b.c", "subject": ["not", "text"]})
    unknown = ArgumentsCheck(name="nope", arguments={})
    verdicts = [
        ArgumentsVerdict.model_validate(
            await call_activity(client, queue, "check_tool_arguments", c.model_dump())
        )
        for c in (good, bad, unknown)
    ]
    assert verdicts[0] == ArgumentsVerdict()
    assert verdicts[1].fields == ["subject"]
    assert verdicts[2].problem is not None and "unknown tool 'nope'" in verdicts[2].problem


# ---- MCP servers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "needs"),
    [
        (True, {"add": True, "shout": True}),
        (["shout"], {"add": False, "shout": True}),
        (False, {"add": False}),
    ],
)
def test_mcp_approval_required_is_all_tools_or_a_list(value: object, needs: dict[str, bool]) -> None:
    [config] = parse_mcp_config(
        {"mcpServers": {"s": {"command": "x", "tools": ["add", "shout"], "approval_required": value}}}
    ).values()
    assert {tool: config.needs_approval(tool) for tool in needs} == needs


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "approval_required: expected true, false or a list of the server's tool names"),
        ([1], "approval_required: expected true, false or a list of the server's tool names"),
        (["add", "add"], "`approval_required` lists a name twice"),
        (["nope"], "`approval_required` names 'nope', which `tools` does not offer"),
        (["*"], '`approval_required` is true (every tool) or a list of tool names, not ["*"]'),
    ],
)
def test_bad_mcp_approval_required_is_a_named_config_error(value: object, message: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(
            {"mcpServers": {"s": {"command": "x", "tools": ["add"], "approval_required": value}}}, "m.json"
        )
    assert str(caught.value) == f"m.json: mcpServers.s: {message}"


async def test_a_real_mcp_servers_tools_carry_the_flag_and_their_schema_checks(tmp_path: Path) -> None:
    servers = parse_mcp_config(
        {"mcpServers": {"local": stdio_server(tmp_path, ["add", "shout"], approval_required=["add"])}}
    )
    registry = ToolRegistry()
    async with mcp_tools(servers, registry):
        assert [registry.requires_approval(name) for name in ("local__add", "local__shout")] == [True, False]
        assert registry.check_arguments("local__add", {"a": 1, "b": 2}).problem is None
        assert registry.check_arguments("local__add", {"a": "one"}).fields == ["a", "b"]


async def test_an_mcp_approval_list_naming_a_missing_tool_stops_the_start(tmp_path: Path) -> None:
    entry = stdio_server(tmp_path, ["*"], approval_required=["add", "launch_rockets"])
    with pytest.raises(McpConfigError, match="approval_required names no tool of it: 'launch_rockets'"):
        async with mcp_tools(parse_mcp_config({"mcpServers": {"local": entry}}), ToolRegistry()):
            pass
