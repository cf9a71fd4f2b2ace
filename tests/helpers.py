"""Helpers for the integration tests: start runs, wait for states, read histories."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from clients.update_retry import execute_update
from contracts import (
    WORKFLOW_TYPE,
    Ack,
    RunInput,
    RunResult,
    RunState,
    ScriptTurn,
    ThreadPage,
    ThreadQuery,
    Trace,
)
from conversation import Context, Entry, MessageEntry, MessagePayload
from payloads.blob_store import BlobStore
from payloads.claim_check import BlobStoreDriver
from testing import scripted_agent

ROOT = Path(__file__).resolve().parent.parent


def turn(content: str | None = None, **fields: Any) -> ScriptTurn:
    """A script turn with any fields (`testing.answer` and `testing.call_tools` build the usual ones)."""
    return ScriptTurn.model_validate({"content": content, **fields})


def call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """A scripted tool call (shorthand)."""
    return {"name": name, "arguments": arguments, "id": call_id}


async def start_run(
    client: Client,
    task_queue: str,
    script: list[ScriptTurn],
    *,
    query: str = "What is 6 * 7?",
    tools: list[str] | None = None,
    context: Context | None = None,
    context_ref: str = "default",
    **config: Any,
) -> WorkflowHandle[Any, RunResult]:
    """Start a `ReActRun` with the scripted model."""
    run = RunInput(
        query=query,
        config=scripted_agent(*script, tools=tools or [], **config),
        context=context,
        context_ref=context_ref,
    )
    return await client.start_workflow(
        WORKFLOW_TYPE,
        run,
        id=f"test-run-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
        result_type=RunResult,
    )


async def update(handle: WorkflowHandle[Any, RunResult], name: str, payload: BaseModel) -> Ack:
    """Send an acknowledging Update (`steer`, `inject`, `context_modify`, `cancel`), as the client does."""
    return await execute_update(handle, name, payload, Ack)


async def state_of(handle: WorkflowHandle[Any, RunResult]) -> RunState:
    """The run's `state` query."""
    return await handle.query("state", result_type=RunState)


async def trace_of(handle: WorkflowHandle[Any, RunResult]) -> Trace:
    """The run's `trace` query."""
    return await handle.query("trace", result_type=Trace)


async def thread_of(handle: WorkflowHandle[Any, RunResult]) -> list[Entry]:
    """The run's whole thread, read page by page with the `thread` query."""
    entries: list[Entry] = []
    since: int | None = 0
    while since is not None:
        page = await handle.query("thread", ThreadQuery(since_seq=since), result_type=ThreadPage)
        entries.extend(page.entries)
        since = page.next_seq
    return entries


async def context_of(handle: WorkflowHandle[Any, Any]) -> Context:
    """The run's `context` query (the materialized context of its active lane)."""
    return await handle.query("context", result_type=Context)


async def wait_until(
    handle: WorkflowHandle[Any, RunResult],
    predicate: Callable[[RunState, Trace], bool],
    timeout_s: float = 20,
) -> tuple[RunState, Trace]:
    """Poll state and trace until `predicate` holds (fails the test on timeout)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    last = "no answer yet"
    while asyncio.get_running_loop().time() < deadline:
        try:
            state, trace = await state_of(handle), await trace_of(handle)
        except RPCError as err:  # e.g. a worker process that is still starting
            last = f"query failed: {err}"
        else:
            if predicate(state, trace):
                return state, trace
            last = f"state={state.model_dump_json()}"
        await asyncio.sleep(0.1)
    raise AssertionError(f"condition not reached within {timeout_s}s; {last}")


def started_llm_calls(trace: Trace) -> int:
    """How many LLM calls the run has started."""
    return sum(1 for event in trace.events if event.kind == "llm_started")


def message_payloads(entries: list[Entry]) -> list[MessagePayload]:
    """The payloads of the message entries, in order (context operations skipped)."""
    return [e.payload for e in entries if isinstance(e, MessageEntry)]


def messages(entries: list[Entry]) -> list[tuple[str, str]]:
    """(role, content) of the message entries, in order."""
    return [(e.payload.role, e.payload.content) for e in entries if isinstance(e, MessageEntry)]


async def llm_inputs(handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
    """The LLM activity inputs as recorded in a run's history (what the model saw)."""
    history = await handle.fetch_history()
    inputs: list[dict[str, Any]] = []
    for event in history.events:
        attrs = event.activity_task_scheduled_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and attrs.activity_type.name == "llm_call"
        ):
            inputs.append(json.loads(attrs.input.payloads[0].data))
    return inputs


CLAIM_REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()


def claim_digest_of(payload: Payload) -> str | None:
    """The payload-store digest a claim-checked payload refers to (None: the payload is inline)."""
    if payload.metadata.get("messageType") != CLAIM_REFERENCE_TYPE:
        return None
    reference = json_format.Parse(payload.data, ExternalStorageReference())
    return reference.claim_data["sha256"]


async def payload_data(payload: Payload, store: BlobStore) -> bytes:
    """A payload's data (JSON), read from the payload store when history holds only its claim check."""
    digest = claim_digest_of(payload)
    if digest is None:
        return payload.data
    return (await BlobStoreDriver(store).load(digest)).data


BENIGN_TASK_FAILURES = frozenset({WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND})
"""Causes that are Temporal's normal flow, not a defect: `UnhandledCommand` is the server refusing
a task that completes the workflow while a new signal or Update arrived; the next task handles it."""


async def workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """`cause: message` of every failed workflow task in the history, benign causes left out."""
    history = await handle.fetch_history()
    return [
        f"{WorkflowTaskFailedCause.Name(attributes.cause)}: {attributes.failure.message[:300]}"
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and (attributes := event.workflow_task_failed_event_attributes).cause not in BENIGN_TASK_FAILURES
    ]


async def update_names(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The names of the Updates the workflow accepted, in history order (rejected ones leave no event)."""
    history = await handle.fetch_history()
    return [
        event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]


def spawn_worker(
    address: str, task_queue: str, log: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """The real worker process (`python worker.py`), as a user runs it; its output to `log`, or nowhere."""
    command = [sys.executable, "worker.py", "--address", address, "--task-queue", task_queue]
    return _spawn(command, log, env)


def spawn_gateway(
    address: str, task_queue: str, port: int, *args: str, log: Path | None = None, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """The real gateway process (`python gateway.py` on 127.0.0.1:`port`, and `args`), as a user runs it."""
    command = [sys.executable, "gateway.py", "--address", address, "--task-queue", task_queue]
    return _spawn([*command, "--port", str(port), *args], log, env)


def _spawn(command: list[str], log: Path | None, env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    if log is None:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    with log.open("wb") as sink:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)


async def workflow_exists(client: Client, workflow_id: str) -> bool:
    """Whether Temporal still describes the workflow (False once it is deleted: not found)."""
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
