"""The workflows also run in Temporal's full sandbox (`python worker.py --sandbox`).

Production workers run the workflows outside the sandbox (`hosting.sandbox.workflow_runner`);
the sandbox is the setting for changing workflow code, where it polices every call at
run time. So the workflows must keep working in it: a representative set of the run's
and the session's tests runs here again against a sandboxed worker that caches no
workflows, every module re-imported per run, nothing passed through.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from hosting.sandbox import workflow_runner
from hosting.worker_process import _parser  # pyright: ignore[reportPrivateUsage]
from payloads.blob_store import BlobStore
from payloads.settings import SettingsError, load_settings
from tests import (
    test_local_tools,
    test_robustness_inputs,
    test_run_basics,
    test_run_context,
    test_run_steering,
    test_session,
    test_session_lifetime,
)
from tests.agent_tools import registry_for_tests
from worker import build_worker

QueueTest = Callable[[Client, str], Awaitable[None]]

IN_THE_SANDBOX: list[QueueTest] = [
    test_run_basics.test_tool_round_with_calculator,
    test_run_basics.test_parallel_tool_calls_keep_call_order,
    test_run_basics.test_input_that_does_not_decode_fails_the_workflow_instead_of_retrying,
    test_local_tools.test_a_local_tool_runs_as_a_local_activity_and_a_regular_one_does_not,
    test_run_steering.test_steer_during_slow_llm_call_is_drained_before_the_next_call,
    test_run_steering.test_queued_input_is_dropped_on_cancel,
    test_run_context.test_two_ops_during_a_run_only_the_latest_is_applied_after_the_messages,
    test_session.test_two_turns_the_second_call_sees_the_first,
    test_session.test_steer_and_inject_reach_the_active_run,
    test_session.test_cancel_through_the_session,
    test_robustness_inputs.test_json_the_worker_cannot_parse_gets_a_named_rejection,
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
    runner: object = worker.config().get("workflow_runner")  # pyright: ignore[reportUnknownMemberType]
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


def test_the_runner_follows_the_flag_and_the_setting() -> None:
    assert isinstance(workflow_runner(), UnsandboxedWorkflowRunner)
    assert isinstance(workflow_runner(sandboxed=True), SandboxedWorkflowRunner)
    assert _parser("worker").parse_args(["--sandbox"]).sandbox is True
    assert _parser("worker").parse_args([]).sandbox is False
    assert load_settings({}).workflow_sandbox is False
    assert load_settings({"REACT_WORKFLOW_SANDBOX": "on"}).workflow_sandbox is True
    with pytest.raises(SettingsError, match="REACT_WORKFLOW_SANDBOX"):
        load_settings({"REACT_WORKFLOW_SANDBOX": "sometimes"})
