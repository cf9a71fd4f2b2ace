"""The public testing module, used as a team would: its own tool and environment, the scripted model."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from activities.tools.tool_registry import ToolFailure, ToolRegistry
from conversation import MessageEntry
from payloads.blob_store import LocalDiskBlobStore
from testing import (
    AgentTestEnvironment,
    answer,
    call_tools,
    script_overrides,
    scripted_agent,
    tool_call,
    with_provider_error,
)

ORDERS = {"A-1001": "shipped", "A-1002": "packing"}


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order's status (the team's tool under test).

    Args:
        order_id: the order number, e.g. A-1001.
    """
    if order_id not in ORDERS:
        raise ToolFailure(f"no order {order_id!r}", type="not_found")
    return {"order_id": order_id, "status": ORDERS[order_id]}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def support() -> AsyncIterator[AgentTestEnvironment]:
    registry = ToolRegistry()
    registry.register(lookup_order)
    async with AgentTestEnvironment(registry=registry) as environment:
        yield environment


async def test_a_teams_tool_answers_and_fails_by_name(support: AgentTestEnvironment) -> None:
    agent = scripted_agent(
        call_tools(
            tool_call("lookup_order", {"order_id": "A-1001"}), tool_call("lookup_order", {"order_id": "B-9"})
        ),
        answer("A-1001 has shipped; I cannot find B-9."),
        tools=["lookup_order"],
    )
    result = await support.runs.run("Where are A-1001 and B-9?", agent)
    assert (result.status, result.result) == ("completed", "A-1001 has shipped; I cannot find B-9.")
    tool_messages = [
        e.payload for e in result.entries if isinstance(e, MessageEntry) and e.payload.role == "tool"
    ]
    assert tool_messages[0].content == '{"ok": true, "result": {"order_id": "A-1001", "status": "shipped"}}'
    assert '"type": "not_found"' in tool_messages[1].content and "no order 'B-9'" in tool_messages[1].content


async def test_a_provider_error_is_retried_and_a_session_remembers(support: AgentTestEnvironment) -> None:
    flaky_model = scripted_agent(with_provider_error(answer("Packing."), "rate_limit", times=2))
    run = await support.runs.start("Where is A-1002?", flaky_model)
    result = await run.result()
    assert (result.status, result.result) == ("completed", "Packing.")
    history = await support.client.get_workflow_handle(run.workflow_id).fetch_history()
    started = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert [attributes.attempt for attributes in started] == [3]  # two rate limits, then the answer

    session = support.sessions.get(f"agent-{uuid.uuid4().hex[:8]}")
    first = await session.ask_sync(
        "Where is A-1002?",
        config=scripted_agent(tools=["lookup_order"]),
        overrides=script_overrides(
            call_tools(tool_call("lookup_order", {"order_id": "A-1002"})), answer("It is being packed.")
        ),
    )
    second = await session.ask_sync("And now?", overrides=script_overrides(answer("Still packing.")))
    assert (first.result, second.result) == ("It is being packed.", "Still packing.")
    thread = [e async for e in session.thread()]
    assert [
        e.payload.content for e in thread if isinstance(e, MessageEntry) and e.payload.role == "user"
    ] == [
        "Where is A-1002?",
        "And now?",
    ]


async def test_the_environment_cleans_up_its_own_payload_store() -> None:
    async with AgentTestEnvironment() as environment:
        assert isinstance(environment.store, LocalDiskBlobStore)
        folder = Path(environment.store.root)
        result = await environment.runs.run("6 * 7?", scripted_agent(answer("42")))
        assert result.result == "42"
        assert folder.is_dir()
    assert not folder.exists()
