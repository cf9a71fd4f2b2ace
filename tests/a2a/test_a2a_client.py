"""A2A through the official `a2a-sdk` client: card, send, stream, approvals, cancel, resubscribe.

A real gateway (uvicorn) on the tests' dev server and worker; the client is the SDK's, created
from the agent card the gateway serves.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, SubscribeToTaskRequest, TaskState
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from google.protobuf.json_format import MessageToDict

from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.a2a_helpers import a2a_client, data_parts, final_task, message, stream_events, texts_of
from tests.gateway_helpers import ALICE, BOB, TEST_AGENTS, TEST_TOKENS, GatewayServer, running_gateway

ANSWER = "Durable agents answer through A2A, streamed in pieces."
SLOW = "A slow and steady answer. " * 12
AGENTS = {
    "default": scripted_agent(answer(ANSWER), stream=True),
    "slow": scripted_agent(
        answer(SLOW).model_copy(update={"chunk_chars": 6, "chunk_delay_s": 0.06}),
        stream=True,
        stream_interval_s=0.05,
    ),
    "steerable": scripted_agent(
        answer("Going on and on. " * 10).model_copy(update={"chunk_chars": 5, "chunk_delay_s": 0.05}),
        answer("Brief."),  # after the steer
        stream=True,
    ),
    "approver": TEST_AGENTS["approver"],  # calculator 17 * 23 (call-calc), needing approval
    "talker": scripted_agent(
        call_tools(tool_call("slow", {"seconds": 0.1}, call_id="look"), content="First I look. "),
        call_tools(tool_call("slow", {"seconds": 3}, call_id="wait"), content="Then I wait. "),
        answer("Done."),
        tools=["slow"],
        stream=True,
    ),
}
COMPLETED = TaskState.TASK_STATE_COMPLETED


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(agents: AgentTestEnvironment) -> AsyncIterator[GatewayServer]:
    async with running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as server:
        yield server


async def test_the_card_is_generated_from_the_agent_config(gw: GatewayServer) -> None:
    async with gw.http() as http:
        card = (await http.get("/a2a/approver/.well-known/agent-card.json")).json()
    assert card["name"] == "approver"
    assert card["description"]
    assert card["capabilities"]["streaming"] is True
    assert {i["url"] for i in card["supportedInterfaces"]} == {f"{gw.url}/a2a/approver"}
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"JSONRPC"}
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    skills = {s["id"]: s for s in card["skills"]}
    assert "approval" in skills["tool:calculator"]["description"]
    assert card["url"] == f"{gw.url}/a2a/approver"  # the 0.3 field, for 0.3 clients


async def test_send_waits_for_the_task_and_get_finds_it_for_its_owner_only(gw: GatewayServer) -> None:
    async with a2a_client(gw, "default", ALICE, streaming=False) as alice:
        [response] = await stream_events(alice.send_message(message("Hello?", context_id="a2a-send")))
        task = response.task
        assert task.status.state == COMPLETED
        assert task.context_id == "a2a-send"
        [artifact] = [a for a in task.artifacts if a.name == "answer"]
        assert artifact.parts[0].text == ANSWER
        got = await alice.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == COMPLETED
        assert got.artifacts[0].parts[0].text == ANSWER
        assert MessageToDict(got.metadata)["usage"]["llm_calls"] == 1
    async with a2a_client(gw, "default", BOB, streaming=False) as bob:
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id="a2a-send:no-such-request"))


async def test_stream_gives_status_updates_text_as_it_streams_then_the_answer(gw: GatewayServer) -> None:
    async with a2a_client(gw, "default", ALICE) as alice:
        events = await stream_events(alice.send_message(message("Stream it")))
    assert events[0].HasField("task")
    assert texts_of(events) == ANSWER
    steps = [data_parts(e.status_update.status.message) for e in events if e.HasField("status_update")]
    assert any(d and d[0]["event"] == "request_started" for d in steps)
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert [a.parts[0].text for a in answers] == [ANSWER]
    assert events[-1].status_update.status.state == COMPLETED


async def test_a_call_awaiting_approval_is_input_required_and_the_next_message_approves(
    gw: GatewayServer,
) -> None:
    async with a2a_client(gw, "approver", ALICE) as alice:
        events = await stream_events(alice.send_message(message("What is 17 * 23?")))
        waiting = final_task(events)
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [pending] = data_parts(waiting.status.message)
        assert pending["call_id"] == "call-calc" and pending["tool"] == "calculator"
        task_id = events[0].task.id
        assert (
            await alice.get_task(GetTaskRequest(id=task_id))
        ).status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        decision = message(task_id=task_id, context_id=events[0].task.context_id, data={"approved": True})
        resumed = await stream_events(alice.send_message(decision))
        done = final_task(resumed)
        assert done.status.state == COMPLETED
        assert [a.parts[0].text for a in done.artifacts if a.name == "answer"] == ["17 * 23 = 391."]
        again = message(task_id=task_id, data={"approved": False})
        with pytest.raises(UnsupportedOperationError):  # the task has ended: nothing to decide
            await stream_events(alice.send_message(again))


async def test_cancel_ends_the_task_canceled(gw: GatewayServer) -> None:
    async with a2a_client(gw, "slow", ALICE) as alice:
        stream = alice.send_message(message("Take your time"))
        first = await anext(stream)
        task_id = first.task.id
        await anext(stream)
        canceled = await alice.cancel_task(CancelTaskRequest(id=task_id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        rest = await stream_events(stream)
        assert final_task(rest).status.state == TaskState.TASK_STATE_CANCELED
        assert (
            await alice.get_task(GetTaskRequest(id=task_id))
        ).status.state == TaskState.TASK_STATE_CANCELED


async def test_resubscribe_after_a_dropped_connection_gets_every_update_and_the_answer_once(
    gw: GatewayServer,
) -> None:
    async with a2a_client(gw, "slow", ALICE) as alice:
        stream = alice.send_message(message("Keep going"))
        first = await anext(stream)
        seen = [first, await anext(stream), await anext(stream)]
        await stream.aclose()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType] - drops mid-answer
    await asyncio.sleep(0.3)
    async with a2a_client(gw, "slow", ALICE) as again:
        events = await stream_events(again.subscribe(SubscribeToTaskRequest(id=first.task.id)))
    assert events[0].HasField("task")
    answers = [a.parts[0].text for a in events[0].task.artifacts]  # already ended: the task holds it
    answers += [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    assert answers == [SLOW]
    steps = [
        d[0]["event"]
        for e in events
        if e.HasField("status_update")
        for d in [data_parts(e.status_update.status.message)]
        if d
    ]
    assert steps.count("request_started") == 1
    assert events[-1].status_update.status.state == COMPLETED
    assert len(seen) == 3


async def test_a_stream_joining_late_gets_the_text_its_run_no_longer_streams(
    gw: GatewayServer, agents: AgentTestEnvironment
) -> None:
    # A run keeps one model call of deltas in its stream: once the second call has ended, the
    # first call's deltas are gone, and a fresh gateway's subscription never sees them.
    async with a2a_client(gw, "talker", ALICE) as alice:
        stream = alice.send_message(message("Look, then wait"))
        first = await anext(stream)
        async for event in stream:
            if any(d.get("call_id") == "wait" for d in data_parts(event.status_update.status.message)):
                break
        await stream.aclose()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    async with (
        running_gateway(agents, AGENTS, tokens=TEST_TOKENS) as fresh,
        a2a_client(fresh, "talker", ALICE) as again,
    ):
        events = await stream_events(again.subscribe(SubscribeToTaskRequest(id=first.task.id)))
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING  # joined while the tool ran
    assert texts_of(events) == "First I look. Then I wait. Done."
    assert final_task(events).status.state == COMPLETED


async def test_a_busy_context_follows_the_busy_policy_of_the_metadata(gw: GatewayServer) -> None:
    context = f"busy-{uuid.uuid4().hex[:6]}"
    async with a2a_client(gw, "slow", ALICE) as alice:
        stream = alice.send_message(message("First", context_id=context))
        first = await anext(stream)
        with pytest.raises(UnsupportedOperationError) as refused:
            await stream_events(alice.send_message(message("Second", context_id=context)))
        assert "busy" in repr(refused.value)
        queued_stream = alice.send_message(
            message("Third", context_id=context, metadata={"on_busy": "enqueue"})
        )
        queued = await anext(queued_stream)
        assert queued.task.status.state == TaskState.TASK_STATE_SUBMITTED
        assert queued.task.id != first.task.id
        done = await stream_events(queued_stream)
        assert final_task(done).status.state == COMPLETED
        assert final_task(await stream_events(stream)).status.state == COMPLETED


async def test_a_text_message_on_a_working_task_steers_its_run(gw: GatewayServer) -> None:
    async with a2a_client(gw, "steerable", ALICE) as alice:
        stream = alice.send_message(message("Start talking"))
        first = await anext(stream)
        await anext(stream)
        steer = message("Be brief", task_id=first.task.id, context_id=first.task.context_id)
        steered = await stream_events(alice.send_message(steer))
        assert steered[0].task.id == first.task.id  # the same task, streamed to its end
        done = final_task(steered)
        assert done.status.state == COMPLETED
        assert [a.parts[0].text for a in done.artifacts if a.name == "answer"] == ["Brief."]
        steps = [d[0]["event"] for e in steered for d in [data_parts(e.status_update.status.message)] if d]
        assert "input_injected" in steps
        await stream_events(stream)
