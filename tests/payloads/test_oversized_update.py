"""An Update over the blob limit from a plain client, whose caller gives up early (issue 14, defect 1).

A workflow's answer to an Update repeats the request, so an Update over the server's blob limit
(2 MiB) that reaches a worker cannot be answered: the SDK fails the workflow task
(`PAYLOADS_TOO_LARGE`), the server redelivers the Update with the next task, and once its caller
has given up nothing removes it: the workflow is wedged (Temporal features issue 723). The
product's clients never send one (they claim-check payloads over 128 KiB); plain clients can.

* On a server with the product's dynamic config (`hosting.dev_server.DYNAMIC_CONFIG`: the dev
  server, `docker-compose.yml`) the server refuses such an Update itself and nothing wedges.
* On a server with Temporal's defaults the wedge is real, and the operator's recovery
  (docs/operations.md) is `temporal workflow reset --type LastWorkflowTask`: proven here.

Each case runs on its own dev server (the bound is server-wide) with its own worker.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from contracts import RunResult
from contracts.session import SessionStatus
from hosting.data_converter import build_data_converter
from hosting.dev_server import BLOB_SIZE_LIMIT, DYNAMIC_CONFIG, dynamic_config_args, temporal_binary
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run, turn, workflow_task_failures
from tests.llm_gate import answer_llm_call, held, held_llm_call
from tests.session_helpers import ask_sync, new_session_id
from worker import build_worker

MB = 1_000_000
CALLER_TIMEOUT = timedelta(seconds=10)
"""The plain caller gives up after this (the defect needs a caller that gives up first)."""
COMPOSE_CONFIG = Path(__file__).resolve().parents[2] / "hosting" / "temporal-dynamic-config.yaml"
REASON = "an oversized Update wedged it"
PAYLOADS_TOO_LARGE = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE


class Server:
    """A dev server of its own, a worker on it, and a plain client (the SDK's default converter)."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client, self.task_queue = client, task_queue
        self.plain = Client(
            client.service_client, namespace=client.namespace, data_converter=pydantic_data_converter
        )


async def serve(extra_args: list[str], store: BlobStore) -> AsyncIterator[Server]:
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        data_converter=build_data_converter(),
        dev_server_existing_path=temporal_binary(),
        dev_server_log_level="error",
        dev_server_extra_args=extra_args,
    ) as environment:
        queue = f"oversized-{uuid.uuid4().hex[:8]}"
        registry = registry_for_tests()
        async with build_worker(
            environment.client, task_queue=queue, registry=registry, store=store, max_cached_workflows=0
        ):
            yield Server(environment.client, queue)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def bounded(store: BlobStore) -> AsyncIterator[Server]:
    """A dev server with the product's dynamic config, as `hosting.dev_server` starts it."""
    async for server in serve(dynamic_config_args(), store):
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stock(store: BlobStore) -> AsyncIterator[Server]:
    """A dev server with Temporal's defaults (a cluster the operator has not configured)."""
    async for server in serve([], store):
        yield server


async def plain_update(server: Server, workflow_id: str, name: str, content: str) -> Any:
    """An Update from a plain client whose caller gives up after `CALLER_TIMEOUT`."""
    handle = server.plain.get_workflow_handle(workflow_id)
    payload = {"query": content} if name == "ask" else {"content": content}
    return await handle.execute_update(name, payload, rpc_timeout=CALLER_TIMEOUT)  # pyright: ignore[reportUnknownMemberType]


async def answers_queries(handle: WorkflowHandle[Any, Any]) -> bool:
    try:
        await handle.query("__temporal_workflow_metadata")
    except RPCError:
        return False
    return True


def test_the_compose_servers_dynamic_config_is_the_dev_servers() -> None:
    document = yaml.safe_load(COMPOSE_CONFIG.read_text(encoding="utf-8"))
    assert {key: entries[0]["value"] for key, entries in document.items()} == DYNAMIC_CONFIG
    bound = DYNAMIC_CONFIG["history.maxInFlightUpdatePayloads"]
    assert isinstance(bound, int) and bound < BLOB_SIZE_LIMIT


# ---- the product's server: refused by the server, nothing wedges ---------------------------------


async def test_the_bound_refuses_a_3_mb_update_to_a_run_and_the_run_finishes(
    bounded: Server, store: BlobStore
) -> None:
    run = await start_run(bounded.client, bounded.task_queue, [held()])
    with pytest.raises(RPCError) as refused:
        await plain_update(bounded, run.id, "steer", "x" * (3 * MB))
    assert refused.value.status == RPCStatusCode.RESOURCE_EXHAUSTED
    assert "in-flight updates" in refused.value.message
    assert await answers_queries(run), "the run answers queries"
    await answer_llm_call(bounded.client, store, run.id, "the answer")
    result: RunResult = await run.result()
    assert result.status == "completed" and result.result == "the answer"
    assert await workflow_task_failures(run) == [], "no worker ever saw the Update"


async def test_the_bound_refuses_a_3_mb_ask_to_an_idle_session_and_it_answers_the_next(
    bounded: Server,
) -> None:
    sid = new_session_id()
    await ask_sync(bounded.client, bounded.task_queue, sid, "hello", turn("hi"))
    with pytest.raises(RPCError) as refused:
        await plain_update(bounded, sid, "ask", "q" * (3 * MB))
    assert refused.value.status == RPCStatusCode.RESOURCE_EXHAUSTED
    session = bounded.client.get_workflow_handle(sid)
    assert (await session.query("status", result_type=SessionStatus)).state == "idle"
    assert (
        await ask_sync(bounded.client, bounded.task_queue, sid, "still there?", turn("yes"))
    ).result == "yes"
    assert await workflow_task_failures(session) == []


async def test_an_update_under_the_bound_still_gets_its_named_rejection(
    bounded: Server, store: BlobStore
) -> None:
    run = await start_run(bounded.client, bounded.task_queue, [held()])
    with pytest.raises(WorkflowUpdateFailedError) as rejected:
        await plain_update(bounded, run.id, "steer", "x" * int(1.5 * MB))
    assert isinstance(rejected.value.cause, ApplicationError)
    assert rejected.value.cause.type == "payload_too_large"
    await answer_llm_call(bounded.client, store, run.id, "the answer")
    assert (await run.result()).result == "the answer"
    assert await workflow_task_failures(run) == []


# ---- Temporal's defaults: the wedge, and the operator's recovery --------------------------------------


async def wedged(server: Server, workflow_id: str) -> WorkflowHandle[Any, Any]:
    """Wait until the workflow's tasks fail with `PAYLOADS_TOO_LARGE` (the wedge), and show it."""
    handle = server.client.get_workflow_handle(workflow_id)
    for _ in range(3_000):  # a safety net of about 5 minutes; the first failed task comes at once
        history = await handle.fetch_history()
        causes = [
            e.workflow_task_failed_event_attributes.cause
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        if PAYLOADS_TOO_LARGE in causes:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"{workflow_id}: no workflow task failed")
    # A query waits for a task that succeeds: "Workflow Task in failed state", or it times out.
    assert not await answers_queries(handle), f"{workflow_id} answers queries"
    return handle


async def until_idle(server: Server, session_id: str) -> None:
    """Wait until the (reset) session answers `status` as idle; a safety bound turns a hang into a failure."""
    handle = server.client.get_workflow_handle(session_id)
    status: SessionStatus | None = None
    for _ in range(1_200):  # about 2 minutes
        try:
            status = await handle.query("status", result_type=SessionStatus)
        except (RPCError, WorkflowQueryFailedError):
            status = None  # the new run's first task may not have completed yet
        if status is not None and status.state == "idle":
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{session_id} did not become idle after the reset: {status}")


async def retried_at_least(handle: WorkflowHandle[Any, Any], attempts: int) -> None:
    """Wait until the workflow's pending task is on attempt `attempts` (the same failure, again)."""
    for _ in range(3_000):
        description = await handle.describe()
        if description.raw_description.pending_workflow_task.attempt >= attempts:
            assert description.status == WorkflowExecutionStatus.RUNNING
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{handle.id}: its workflow task was not retried {attempts} times")


def reset_to_last_workflow_task(server: Server, workflow_id: str) -> None:
    """The operator's recovery, with the CLI as docs/operations.md gives it."""
    command = [
        temporal_binary(),
        "workflow",
        "reset",
        "--address",
        server.client.service_client.config.target_host,
        "--workflow-id",
        workflow_id,
        "--type",
        "LastWorkflowTask",
        "--reason",
        REASON,
        "--yes",
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=60)


async def test_on_a_stock_server_a_3_mb_update_wedges_a_run_and_a_reset_recovers_it(
    stock: Server, store: BlobStore
) -> None:
    run = await start_run(stock.client, stock.task_queue, [held()])
    # The LLM call must be scheduled first: on a loaded machine the Update could otherwise reach the
    # run's first workflow task, which would then fail too and never schedule the call.
    await held_llm_call(stock.client, store, run.id)
    with pytest.raises(WorkflowUpdateRPCTimeoutOrCancelledError):  # the caller gives up; the server keeps it
        await plain_update(stock, run.id, "steer", "x" * (3 * MB))
    handle = await wedged(stock, run.id)
    # The script ends, yet the run cannot finish: every task fails on the same Update.
    await answer_llm_call(stock.client, store, run.id, "lost answer")
    await retried_at_least(handle, 3)
    reset_to_last_workflow_task(stock, run.id)
    # The reset run repeats the LLM call (the failed tasks never recorded the first answer).
    await answer_llm_call(stock.client, store, run.id, "the answer")
    result: RunResult = await stock.client.get_workflow_handle(run.id, result_type=RunResult).result()
    assert result.status == "completed" and result.result == "the answer"
    [reset] = await workflow_task_failures(stock.client.get_workflow_handle(run.id))
    assert reset.startswith("WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW") and reset.endswith(REASON)


async def test_on_a_stock_server_a_3_mb_ask_wedges_a_session_and_a_reset_recovers_it(stock: Server) -> None:
    sid = new_session_id()
    await ask_sync(stock.client, stock.task_queue, sid, "hello", turn("hi"))
    with pytest.raises(WorkflowUpdateRPCTimeoutOrCancelledError):
        await plain_update(stock, sid, "ask", "q" * (3 * MB))
    handle = await wedged(stock, sid)
    await retried_at_least(handle, 2)
    reset_to_last_workflow_task(stock, sid)
    await until_idle(stock, sid)  # as an operator checks `status` before asking again
    record = await ask_sync(stock.client, stock.task_queue, sid, "still there?", turn("yes"))
    assert record.status == "completed" and record.result == "yes"
    status = await stock.client.get_workflow_handle(sid).query("status", result_type=SessionStatus)
    assert status.state == "idle" and status.thread_length == 4, "the conversation survived the reset"
