"""The workflows also run in Temporal's full sandbox (`python worker.py --sandbox`).

Production workers run the workflows outside the sandbox (`hosting.sandbox.workflow_runner`);
the sandbox is the setting for changing workflow code, where it polices every call at
run time. So the workflows must keep working in it: a representative set of the run's
and the session's tests runs here again against a sandboxed worker that caches no
workflows, so every workflow task gets a new sandbox that imports every product module
afresh (but `hosting.sandbox.SHARED_WITH_THE_SANDBOX`), which a probe workflow checks. That
costs a few tenths of a second of CPU per task, so tests whose controls must land within a
model call of a few seconds are not in the set: the controls here wait on counts.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from clients import sessions
from contracts import CancelInput, RunResult, SteerInput
from hosting.sandbox import SHARED_WITH_THE_SANDBOX, WORKFLOW_PACKAGES, workflow_runner
from hosting.worker_process import _parser  # pyright: ignore[reportPrivateUsage]
from payloads.blob_store import BlobStore
from settings.deployment import load_settings
from settings.env_values import SettingsError
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run, started_llm_calls, trace_of, turn, update, wait_until
from tests.run import test_robustness_inputs, test_run_basics, test_run_steering
from tests.run.test_robustness_inputs import LONE_SURROGATE, raw, rejected
from tests.sandbox_probe import SandboxModuleProbe
from tests.session import test_session, test_session_lifetime
from tests.session_helpers import ask, new_session_id
from tests.tools import test_local_tools
from worker import build_worker

QueueTest = Callable[[Client, str], Awaitable[None]]

IN_THE_SANDBOX: list[QueueTest] = [
    test_run_basics.test_tool_round_with_calculator,
    test_run_basics.test_parallel_tool_calls_keep_call_order,
    test_run_basics.test_input_that_does_not_decode_fails_the_workflow_instead_of_retrying,
    test_local_tools.test_a_local_tool_runs_as_a_local_activity_and_a_regular_one_does_not,
    test_run_steering.test_queued_input_is_dropped_on_cancel,
    test_session.test_two_turns_the_second_call_sees_the_first,
    test_session.test_run_terminated_from_outside_leaves_the_session_usable,
    test_session.test_cancel_through_the_session,
    test_robustness_inputs.test_out_of_range_config_numbers_fail_the_run_at_once,
]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def sandboxed_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    queue = f"react-agent-sandboxed-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        client,
        task_queue=queue,
        registry=registry_for_tests(),
        store=store,
        sandboxed=True,
        max_cached_workflows=0,
    )
    runner: object = worker.config(active_config=True).get("workflow_runner")  # pyright: ignore[reportUnknownMemberType]
    assert isinstance(runner, SandboxedWorkflowRunner)
    async with worker:
        yield queue


@pytest.mark.parametrize("case", IN_THE_SANDBOX, ids=lambda case: f"{case.__module__}.{case.__name__}")
async def test_in_the_sandbox(case: QueueTest, client: Client, sandboxed_queue: str) -> None:
    await case(client, sandboxed_queue)


async def test_a_session_continues_as_new_in_the_sandbox(
    client: Client, sandboxed_queue: str, store: BlobStore
) -> None:
    long_conversation = (
        test_session_lifetime.test_long_conversation_continues_as_new_losing_and_duplicating_nothing
    )
    await long_conversation(client, sandboxed_queue, store)


async def test_the_sandbox_imports_the_product_modules_itself(client: Client) -> None:
    queue = f"sandbox-probe-{uuid.uuid4().hex[:8]}"
    runner = workflow_runner(sandboxed=True)
    async with Worker(client, task_queue=queue, workflows=[SandboxModuleProbe], workflow_runner=runner):
        in_sandbox = await client.execute_workflow(
            SandboxModuleProbe.run, list(WORKFLOW_PACKAGES), id=queue, task_queue=queue
        )
    assert {"workflows.run.loop", "workflows.run.tool_round", "contracts.run", "conversation.state"} <= set(
        in_sandbox
    )
    shared = {name for name, ident in in_sandbox.items() if ident == id(sys.modules[name])}
    assert shared == set(SHARED_WITH_THE_SANDBOX)


async def test_steer_and_inject_reach_the_active_run_through_the_session(
    client: Client, sandboxed_queue: str
) -> None:
    # Not `test_session`'s version, which needs both to arrive within a 1.5 s model call: a
    # sandbox is built for every workflow task here, and that race is lost on a busy machine.
    sid = new_session_id()
    accepted = await ask(client, sandboxed_queue, sid, "long", turn("never", delay_s=60))
    session = client.get_workflow_handle(sid)
    run = client.get_workflow_handle(accepted.run_workflow_id, result_type=RunResult)
    await test_session.wait_running(client, accepted.run_workflow_id)
    steer = SteerInput(content="be concise", expected_request_id=accepted.request_id)
    assert (await update(session, "steer", steer)).status == "queued"
    await session.signal("inject", SteerInput(content="fyi: metric units"))
    await wait_until(run, lambda state, _trace: state.queued_inputs == 2)
    assert (await update(session, "cancel", CancelInput())).status == "accepted"
    record = await sessions.await_result(client, sid, accepted.request_id)
    assert record.status == "cancelled"
    assert (await trace_of(run)).events[-1].data["dropped_inputs"] == 2


async def test_an_unreadable_payload_is_named_so_in_the_sandbox(client: Client, sandboxed_queue: str) -> None:
    # The payload converter, outside the sandbox, hands the handler `contracts.decoding.Undecodable`.
    run = await start_run(client, sandboxed_queue, [turn("never", delay_s=60)])
    await wait_until(run, lambda _state, trace: started_llm_calls(trace) == 1)
    steer = raw(client).get_workflow_handle(run.id).execute_update("steer", {"content": LONE_SURROGATE})  # pyright: ignore[reportUnknownMemberType]
    await rejected(steer, "invalid_input", "not readable JSON")
    await run.cancel()


def test_the_runner_follows_the_flag_and_the_setting() -> None:
    assert isinstance(workflow_runner(), UnsandboxedWorkflowRunner)
    assert isinstance(workflow_runner(sandboxed=True), SandboxedWorkflowRunner)
    assert _parser("worker").parse_args(["--sandbox"]).sandbox is True
    assert _parser("worker").parse_args([]).sandbox is False
    assert load_settings({}).workflow_sandbox is False
    assert load_settings({"REACT_WORKFLOW_SANDBOX": "on"}).workflow_sandbox is True
    with pytest.raises(SettingsError, match="REACT_WORKFLOW_SANDBOX"):
        load_settings({"REACT_WORKFLOW_SANDBOX": "sometimes"})
