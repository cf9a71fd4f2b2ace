"""Bad input never wedges a run or a session (issue 8, defects 2, 3 and 8, and JSON the worker cannot parse).

Each case gets its named, non-retryable error (or a rejected `Ack`), no workflow task fails,
and the run or session goes on to do its real work. The payloads come from the `temporal`
CLI and from a raw client with the SDK's default JSON converter (what another SDK or a
script sends), and from this product's own client.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from clients import sessions
from contracts import Ack, RunResult, SteerInput
from contracts.session import AskAccepted
from hosting.dev_server import temporal_binary
from tests.helpers import messages, start_run, started_llm_calls, thread_of, turn, update, wait_until
from tests.session_helpers import ask, new_session_id, session_thread, status

SCRIPT = [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"content": "done"}]
CONFIG = {"model": "scripted", "tools": ["echo"], "script": SCRIPT}
OUT_OF_RANGE: list[tuple[str, Any]] = [
    ("llm_timeout_s", 1e308),
    ("llm_timeout_s", math.nan),
    ("llm_timeout_s", -math.inf),
    ("llm_max_attempts", 2**40),
    ("tool_timeout_s", 1e308),
    ("tool_retry_backoff_s", 1e308),
    ("tool_max_retries", 2**40),
    ("tool_concurrency", 2**40),
    ("max_iterations", 2**63),
    ("model_settings", {"max_tokens": 2**70, "temperature": math.nan}),
    ("script", [{"content": "x", "delay_s": 1e308}]),
    ("context_policy", {"max_input_tokens": 2**64}),
]
"""Config fields (and values) that used to pass validation and then crash timedelta/protobuf conversion."""


def raw(client: Client) -> Client:
    return Client(client.service_client, namespace=client.namespace, data_converter=DataConverter.default)


async def task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        event.workflow_task_failed_event_attributes.failure.message
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def fails_once(handle: WorkflowHandle[Any, Any], code: str, mentions: str = "") -> None:
    """The workflow failed (within 60 s, on a busy machine) with `code`, non-retryable, no task failed."""
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == code, f"{handle.id}: {cause!r}"
    assert cause.non_retryable and mentions in cause.message, cause.message
    assert not await task_failures(handle)


async def rejected(call: Any, code: str, mentions: str = "") -> str:
    """`call` (an Update) failed with the named `code`; returns the message."""
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await asyncio.wait_for(call, timeout=20)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == code, repr(cause)
    assert mentions in cause.message, cause.message
    return cause.message


async def cli(client: Client, *args: str) -> tuple[int, str]:
    """Run the `temporal` CLI against the test server; (exit code, stdout and stderr)."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def slow_run(client: Client, task_queue: str) -> WorkflowHandle[Any, RunResult]:
    handle = await start_run(client, task_queue, [turn("draft", delay_s=4), turn("final")])
    await wait_until(handle, lambda _s, trace: started_llm_calls(trace) == 1)
    return handle


async def healthy_after(handle: WorkflowHandle[Any, RunResult]) -> None:
    """A valid steer is still queued, and the run completes with exactly the expected thread."""
    assert (await update(handle, "steer", SteerInput(content="Be brief."))).status == "queued"
    result = await asyncio.wait_for(handle.result(), timeout=30)
    assert result.status == "completed" and result.result == "final"
    expected = [
        ("user", "What is 6 * 7?"),
        ("assistant", "draft"),
        ("user", "Be brief."),
        ("assistant", "final"),
    ]
    assert messages(await thread_of(handle)) == expected
    assert not await task_failures(handle)


async def test_cli_signals_and_updates_with_no_or_extra_input_are_rejected(
    client: Client, task_queue: str
) -> None:
    handle = await slow_run(client, task_queue)
    run = ["-w", handle.id]
    assert (await cli(client, "workflow", "signal", *run, "--name", "steer"))[0] == 0
    assert (await cli(client, "workflow", "signal", *run, "--name", "cancel", "-i", "{}", "-i", "{}"))[0] == 0
    assert (await cli(client, "workflow", "signal", *run, "--name", "context_modify", "-i", "null"))[0] == 0
    for name, inputs, answer in [
        ("steer", [], "blank_content"),
        ("steer", ["-i", "null"], "blank_content"),
        ("context_modify", [], "invalid_op"),
        ("inject", ["-i", '{"content": "a"}', "-i", '{"content": "b"}'], "invalid_input"),
        ("cancel", ["-i", '"stop"'], "invalid_input"),
    ]:
        code, output = await cli(client, "workflow", "update", "execute", *run, "--name", name, *inputs)
        assert answer in output, f"{name} {inputs}: exit {code}: {output}"
    await healthy_after(handle)


async def test_cli_cancel_update_without_input_cancels_the_run(client: Client, task_queue: str) -> None:
    handle = await slow_run(client, task_queue)
    code, output = await cli(client, "workflow", "update", "execute", "-w", handle.id, "--name", "cancel")
    assert code == 0 and "accepted" in output, output
    assert (await asyncio.wait_for(handle.result(), timeout=20)).status == "cancelled"
    assert not await task_failures(handle)


@pytest.mark.parametrize("workflow", ["ReActRun", "AgentSession"])
async def test_cli_start_without_input_fails_the_workflow_once(
    client: Client, task_queue: str, workflow: str
) -> None:
    workflow_id = f"no-input-{uuid.uuid4().hex[:8]}"
    start = [
        "workflow",
        "start",
        "--type",
        workflow,
        "--task-queue",
        task_queue,
        "--workflow-id",
        workflow_id,
    ]
    code, output = await cli(client, *start)
    assert code == 0, output
    await fails_once(client.get_workflow_handle(workflow_id), "invalid_input", "argument")


async def test_python_null_and_extra_arguments_are_rejected(client: Client, task_queue: str) -> None:
    handle = await slow_run(client, task_queue)
    await handle.signal("steer", None)
    await handle.signal("inject", args=[{"content": "a"}, {"content": "b"}])
    await handle.signal("cancel", args=[{}, {}])
    null_ack = await handle.execute_update("steer", None, result_type=Ack)  # pyright: ignore[reportUnknownMemberType]
    assert null_ack.status == "rejected" and null_ack.reason == "blank_content"
    two = handle.execute_update("steer", args=[{"content": "a"}, {"content": "b"}])  # pyright: ignore[reportUnknownMemberType]
    await rejected(two, "invalid_input", "one argument")
    await healthy_after(handle)


async def session_run(client: Client, task_queue: str, session_id: str, query: str) -> AskAccepted:
    accepted = await ask(client, task_queue, session_id, query, turn("draft", delay_s=5), turn("final"))
    run = client.get_workflow_handle(accepted.run_workflow_id, result_type=RunResult)
    await wait_until(run, lambda _s, trace: started_llm_calls(trace) == 1)
    return accepted


async def test_session_cancel_with_null_cancels_the_run_and_the_session_stays_usable(
    client: Client, task_queue: str
) -> None:
    session_id = new_session_id()
    handle = client.get_workflow_handle(session_id)
    first = await session_run(client, task_queue, session_id, "first")
    await handle.signal("cancel", None)
    record = await asyncio.wait_for(sessions.await_result(client, session_id, first.request_id), timeout=20)
    assert record.status == "cancelled"
    assert (await status(handle)).state == "idle"
    second = await session_run(client, task_queue, session_id, "second")
    ack = await handle.execute_update("cancel", None, result_type=Ack)  # pyright: ignore[reportUnknownMemberType]
    assert ack.status == "accepted", ack
    record = await asyncio.wait_for(sessions.await_result(client, session_id, second.request_id), timeout=20)
    assert record.status == "cancelled"
    third = await ask(client, task_queue, session_id, "third", turn("done"))
    record = await asyncio.wait_for(sessions.await_result(client, session_id, third.request_id), timeout=20)
    assert record.status == "completed" and record.result == "done"
    users = [content for role, content in messages(await session_thread(handle)) if role == "user"]
    assert users == ["first", "second", "third"], "the session lost its conversation"
    for workflow_id in (session_id, first.run_workflow_id, second.run_workflow_id, third.run_workflow_id):
        assert not await task_failures(client.get_workflow_handle(workflow_id)), workflow_id


async def test_out_of_range_config_numbers_fail_the_run_at_once(client: Client, task_queue: str) -> None:
    async def start(field: str, value: Any) -> None:
        handle = await raw(client).start_workflow(
            "ReActRun",
            {"query": "q", "config": {**CONFIG, field: value}},
            id=f"out-of-range-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await fails_once(handle, "invalid_input", field)

    await asyncio.gather(*(start(field, value) for field, value in OUT_OF_RANGE))


async def test_out_of_range_ask_overrides_are_rejected_and_the_session_stays_idle(
    client: Client, task_queue: str
) -> None:
    session_id = new_session_id()
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "AgentSession",
        {"agent_id": "test", "config": {"model": "scripted", "tools": ["echo"]}},
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    first_ask = raw(client).execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
        "ask", {"query": "q", "overrides": {"llm_timeout_s": 1e308}}, start_workflow_operation=start
    )
    await rejected(first_ask, "invalid_input", "llm_timeout_s")
    handle = raw(client).get_workflow_handle(session_id)
    for field, value in [*OUT_OF_RANGE, ("context_policy", {"max_input_tokens": 2**64})]:
        overrides = {"overrides": {**CONFIG, field: value}}
        await rejected(handle.execute_update("ask", {"query": "q", **overrides}), "invalid_input", field)  # pyright: ignore[reportUnknownMemberType]
    ask_policy = handle.execute_update("ask", {"query": "q", "context_policy": {"keep_last_turns": 2**40}})  # pyright: ignore[reportUnknownMemberType]
    await rejected(ask_policy, "invalid_input", "keep_last_turns")
    session = client.get_workflow_handle(session_id)
    state = await status(session)
    assert state.state == "idle" and state.thread_length == 0, state
    accepted = await ask(client, task_queue, session_id, "still here?", turn("yes"))
    record = await asyncio.wait_for(
        sessions.await_result(client, session_id, accepted.request_id), timeout=20
    )
    assert record.status == "completed" and record.result == "yes"
    assert not await task_failures(session)


LONE_SURROGATE = "cut emoji \ud83d"
TOO_DEEP: Any = json.loads("[" * 300 + "]" * 300)


async def test_json_the_worker_cannot_parse_gets_a_named_rejection(client: Client, task_queue: str) -> None:
    for junk in (
        {"query": LONE_SURROGATE, "config": CONFIG},
        {"query": "q", "config": {**CONFIG, "tool_context": {"a": TOO_DEEP}}},
    ):
        handle = await raw(client).start_workflow(
            "ReActRun", junk, id=f"unparseable-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        await fails_once(handle, "invalid_input")
    run = await slow_run(client, task_queue)
    junk_handle = raw(client).get_workflow_handle(run.id)
    for payload in ({"content": LONE_SURROGATE}, {"content": "x", "refs": TOO_DEEP}):
        await junk_handle.signal("steer", payload)
        await rejected(junk_handle.execute_update("steer", payload), "invalid_input")  # pyright: ignore[reportUnknownMemberType]
    await healthy_after(run)
    session_id = new_session_id()
    await ask(client, task_queue, session_id, "hello", turn("hi"))
    session = raw(client).get_workflow_handle(session_id)
    await rejected(session.execute_update("ask", {"query": LONE_SURROGATE}), "invalid_input")  # pyright: ignore[reportUnknownMemberType]
