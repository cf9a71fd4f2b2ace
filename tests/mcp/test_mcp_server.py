"""The agents as an MCP server, through the official `mcp` client over streamable HTTP.

Lists the tools, runs `ask` with a tool call that needs approval (input_required, `approve`,
then `status` until the answer), progress notifications with the streamed text, a handle that
`status` and `history` accept, `fork`, and owners: another principal's handle is `not_found`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from gateway.identity.principal import Principal
from gateway.owners import session_id
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.gateway_helpers import ALICE, BOB, TEST_TOKENS, GatewayServer, running_gateway
from tests.mcp_helpers import mcp_client, result_of

ANSWER = "The MCP answer, streamed in pieces to the host."
AGENTS = {
    "default": scripted_agent(answer(ANSWER), stream=True),
    "slow": scripted_agent(
        answer("Slowly " * 30).model_copy(update={"chunk_chars": 5, "chunk_delay_s": 0.05}),
        answer("Briefly."),  # after the steer
        stream=True,
    ),
    "held": scripted_agent(answer("Held. " * 5, delay_s=6), stream=True),  # still running at a cancel
    "approver": scripted_agent(
        call_tools(tool_call("calculator", {"expression": "6 * 7"}, call_id="call-mcp")),
        answer("6 * 7 = 42."),
        tools=["calculator"],
        approval_required=["calculator"],
        stream=True,
    ),
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as server:
        yield server


async def test_the_tools_are_listed(gw: GatewayServer) -> None:
    async with mcp_client(gw, ALICE) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= {"ask", "steer", "approve", "cancel", "status", "history", "fork"}
    schema = tools["ask"].input_schema
    assert "query" in schema["required"]
    assert {"agent", "session", "on_busy", "wait_s"} <= set(schema["properties"])


async def test_ask_streams_progress_and_returns_the_answer(gw: GatewayServer) -> None:
    streamed: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        streamed.append(message or "")

    session = f"mcp-{uuid.uuid4().hex[:6]}"
    async with mcp_client(gw, ALICE) as client:
        done = result_of(
            await client.call_tool("ask", {"query": "Hi", "session": session}, progress_callback=progress)
        )
        assert done["status"] == "completed" and done["answer"] == ANSWER
        assert "".join(streamed) == ANSWER
        assert done["usage"]["llm_calls"] == 1
        history = result_of(await client.call_tool("history", {"session": session}))["messages"]
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert history[-1]["content"] == ANSWER
        assert (
            result_of(await client.call_tool("status", {"handle": done["handle"]}))["status"] == "completed"
        )
        follow_up = result_of(await client.call_tool("ask", {"query": "And?", "session": session}))
        assert follow_up.get("status") == "completed", follow_up
        forked = result_of(await client.call_tool("fork", {"session": session}))
        assert "session" in forked, forked
        again = result_of(await client.call_tool("ask", {"query": "More", "session": forked["session"]}))
        assert again["status"] == "completed"
    async with mcp_client(gw, BOB) as bob:
        refused = await bob.call_tool("history", {"session": session})
        assert refused.is_error and result_of(refused)["error"]["code"] == "not_found"
        refused = await bob.call_tool("status", {"handle": done["handle"]})
        assert refused.is_error and result_of(refused)["error"]["code"] == "not_found"


async def test_ask_with_a_tool_call_awaiting_approval_then_approve(gw: GatewayServer) -> None:
    async with mcp_client(gw, ALICE) as client:
        waiting = result_of(await client.call_tool("ask", {"query": "6 * 7?", "agent": "approver"}))
        assert waiting["status"] == "input_required"
        [pending] = waiting["pending_approvals"]
        assert pending["call_id"] == "call-mcp" and pending["tool"] == "calculator"
        handle = waiting["handle"]
        async with mcp_client(gw, BOB) as bob:
            refused = await bob.call_tool("approve", {"handle": handle})
            assert result_of(refused)["error"]["code"] == "not_found"
        decided = result_of(await client.call_tool("approve", {"handle": handle, "approved": True}))
        assert decided["status"] == "accepted" and decided["call_id"] == "call-mcp"
        done = result_of(await client.call_tool("status", {"handle": handle, "wait_s": 60}))
        assert done.get("status") == "completed" and done["answer"] == "6 * 7 = 42.", done
        history = result_of(await client.call_tool("history", {"handle": handle}))["messages"]
        assert any(m.get("tool_call_id") == "call-mcp" for m in history)


async def test_a_long_ask_returns_a_handle_that_status_follows(gw: GatewayServer) -> None:
    async with mcp_client(gw, ALICE) as client:
        started = result_of(await client.call_tool("ask", {"query": "Go", "agent": "slow", "wait_s": 0.5}))
        assert started["status"] == "running"
        steered = result_of(
            await client.call_tool("steer", {"handle": started["handle"], "text": "Be brief"})
        )
        assert steered["status"] == "queued"
        done = result_of(await client.call_tool("status", {"handle": started["handle"], "wait_s": 60}))
        assert done["status"] == "completed" and done["answer"] == "Briefly."


async def test_cancel_stops_the_run_and_the_request_ends_cancelled(
    gw: GatewayServer, agents: AgentTestEnvironment
) -> None:
    async with mcp_client(gw, ALICE) as client:
        # `held` (6 s before its answer), not `slow` (2 s): on a loaded machine Bob's session and
        # refusal took longer than `slow`'s answer, and the cancel then found it ended.
        started = result_of(await client.call_tool("ask", {"query": "Go", "agent": "held", "wait_s": 0.3}))
        assert started["status"] == "running", started
        async with mcp_client(gw, BOB) as bob:
            refused = await bob.call_tool("cancel", {"handle": started["handle"]})
            assert result_of(refused)["error"]["code"] == "not_found"
        cancelled = result_of(await client.call_tool("cancel", {"handle": started["handle"]}))
        assert cancelled.get("status") == "cancelled", cancelled
        status = result_of(await client.call_tool("status", {"handle": started["handle"]}))
        assert status["status"] == "cancelled", status
        again = await client.call_tool("cancel", {"handle": started["handle"]})
        assert again.is_error and result_of(again)["error"]["code"] == "not_running"
    record = await agents.sessions.get(session_id(Principal("alice"), "held", started["session"])).request(
        started["handle"].rsplit(":", 1)[1]
    )
    assert record.status == "cancelled"  # the session's own record: the run really stopped


async def test_bad_input_is_a_tool_error_with_a_named_reason(gw: GatewayServer) -> None:
    async with mcp_client(gw, ALICE) as client:
        for arguments, code in (
            ({"query": "Hi", "agent": "nobody"}, "unknown_agent"),
            ({"query": "Hi", "session": "bad id!"}, "invalid_input"),
            ({"query": "Hi", "on_busy": "sometimes"}, "invalid_input"),
            ({"query": "x" * 200_001}, "payload_too_large"),
        ):
            refused = await client.call_tool("ask", arguments)
            assert refused.is_error, arguments
            assert result_of(refused)["error"]["code"] == code, arguments
        refused = await client.call_tool("status", {"handle": "default:nope:nope"})
        assert result_of(refused)["error"]["code"] == "not_found"


async def test_steer_and_fork_of_an_unknown_or_another_principals_session_are_not_found(
    gw: GatewayServer,
) -> None:
    """G4: they answered `unavailable: try again` (a host that obeys retries forever)."""
    session = f"mcp-{uuid.uuid4().hex[:6]}"
    async with mcp_client(gw, ALICE) as client:
        done = result_of(await client.call_tool("ask", {"query": "Hi", "session": session}))
        assert done["status"] == "completed"
        for name, arguments in (
            ("steer", {"handle": f"default:never-{session}:r1", "text": "Be brief"}),
            ("fork", {"session": f"never-{session}"}),
        ):
            refused = await client.call_tool(name, arguments)
            assert refused.is_error and result_of(refused)["error"]["code"] == "not_found", (name, refused)
    async with mcp_client(gw, BOB) as bob:
        for name, arguments in (
            ("steer", {"handle": done["handle"], "text": "Be brief"}),
            ("fork", {"session": session}),
        ):
            refused = await bob.call_tool(name, arguments)
            assert refused.is_error and result_of(refused)["error"]["code"] == "not_found", (name, refused)
