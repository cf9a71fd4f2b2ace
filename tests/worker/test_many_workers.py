"""More than one machine: two worker processes on one task queue, one S3 store, one killed mid-flight.

Two `python worker.py` processes poll one task queue with the S3-compatible payload store
(moto's server on 127.0.0.1). Two runs and a session's ask, with a large tool result and a
large answer (claim-checked), reach a tool call that holds on worker A; worker B starts, A is
killed with SIGKILL, and every run completes on B: its thread intact, the claim-checked
payloads A wrote read by B, and B's LLM call naming by digest the messages A's calls cached.
Nothing waits on the clock: each step waits for an event (a log line, a gate file, a result).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from clients.runs import Runs
from clients.sessions import Sessions
from hosting.plugin import DurableReactPlugin
from payloads.s3_blob_store import S3BlobStore
from settings.deployment import S3StoreSetting, load_settings
from testing import answer, call_tools, script_overrides, scripted_agent, tool_call
from tests.helpers import claim_digest_of, payload_data
from tests.many_workers_tools import GATE_DIR_ENV
from tests.payloads.test_s3_blob_store import BUCKET, s3_call
from tests.s3_server import CREDENTIALS, moto_s3_endpoint
from tests.worker_processes import WorkerProcess

ROOT = Path(__file__).resolve().parents[2]
THRESHOLD = 8 * 1024
HUGE = 20_000
"""Characters of the tool result (claim-checked: over THRESHOLD, under the 64 KiB tool-result cut)."""
SAFETY_BOUND_S = 300
"""Fail instead of hanging if something never happens (the test takes about a minute)."""


@dataclass
class Subject:
    """A run (or a session's ask) and what it should end with."""

    tag: str
    run_id: str
    answer: str
    session_id: str | None = None
    request_id: str | None = None


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """Moto's S3 server on 127.0.0.1, with test credentials in this process's environment."""
    with moto_s3_endpoint() as endpoint:
        yield endpoint


@pytest_asyncio.fixture(loop_scope="session")
async def s3_store(s3_endpoint: str) -> AsyncIterator[S3BlobStore]:
    await s3_call(s3_endpoint, "create_bucket", Bucket=BUCKET)
    store = S3BlobStore(S3StoreSetting(BUCKET, f"many-{uuid.uuid4().hex[:8]}", s3_endpoint, "us-east-1"))
    yield store
    await store.aclose()


def worker_env(store: S3BlobStore, gates: Path) -> dict[str, str]:
    setting = store.setting
    return {
        **os.environ,
        **CREDENTIALS,
        "REACT_PAYLOAD_STORE": f"s3://{setting.bucket}/{setting.prefix}",
        "REACT_S3_ENDPOINT_URL": setting.endpoint_url or "",
        "REACT_PAYLOAD_THRESHOLD": str(THRESHOLD),
        # A killed worker's tool call is retried 8 s after its last heartbeat (the deployment's
        # override, from the environment); the run's own tool timeout stays long.
        "REACT_ACTIVITY_OPTIONS": json.dumps({"run_tool": {"heartbeat_timeout_s": 8}}),
        GATE_DIR_ENV: str(gates),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def script(tag: str, final: str) -> list[Any]:
    """A large tool result, then a call that holds on its first worker, then a large answer."""
    return [
        call_tools(tool_call("huge", {"size": HUGE}, call_id=f"{tag}-h")),
        call_tools(tool_call("hold_until_retried", {"label": tag}, call_id=f"{tag}-g")),
        answer(final),
    ]


AGENT: dict[str, Any] = {
    "tools": ["huge", "hold_until_retried"],
    "tool_timeout_s": 300,
    "tool_max_retries": 3,
}


async def start_subjects(client: Client, queue: str, store: S3BlobStore) -> list[Subject]:
    subjects: list[Subject] = []
    runs = Runs(client, task_queue=queue, store=store)
    for _ in range(2):
        tag = f"r{uuid.uuid4().hex[:8]}"
        final = f"done {tag} " + "y" * THRESHOLD
        handle = await runs.start(f"Go {tag}.", scripted_agent(*script(tag, final), **AGENT))
        subjects.append(Subject(tag, handle.workflow_id, final))
    tag = f"s{uuid.uuid4().hex[:8]}"
    final = f"done {tag} " + "y" * THRESHOLD
    session = Sessions(client, task_queue=queue, store=store).get(f"agent-many-{tag}")
    accepted = await session.ask(
        f"Go {tag}.", config=scripted_agent(**AGENT), overrides=script_overrides(*script(tag, final))
    )
    subjects.append(Subject(tag, accepted.run_workflow_id, final, session.workflow_id, accepted.request_id))
    return subjects


async def held_by(gates: Path, subjects: list[Subject]) -> set[int]:
    """Wait until every subject's held call has started; the pids of the workers holding them."""
    while not all((gates / s.tag).exists() for s in subjects):  # noqa: ASYNC110 (files of other processes)
        await asyncio.sleep(0.1)
    return {int((gates / s.tag).read_text()) for s in subjects}


async def finish(client: Client, queue: str, store: S3BlobStore, subject: Subject) -> str | None:
    """The subject's answer, once its run has ended."""
    if subject.session_id is None:
        return (await Runs(client, task_queue=queue, store=store).get(subject.run_id).result()).result
    assert subject.request_id is not None
    session = Sessions(client, task_queue=queue, store=store).get(subject.session_id)
    return (await session.await_result(subject.request_id)).result


def events_of(history: WorkflowHistory, kind: EventType.ValueType) -> list[Any]:
    return [event for event in history.events if event.event_type == kind]


async def test_a_worker_killed_mid_run_leaves_every_run_to_the_other(
    client: Client, s3_store: S3BlobStore, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "REACT_PAYLOAD_STORE": f"s3://{BUCKET}/{s3_store.setting.prefix}",
            "REACT_S3_ENDPOINT_URL": s3_store.setting.endpoint_url or "",
            "REACT_PAYLOAD_THRESHOLD": str(THRESHOLD),
        }
    )
    shared = Client(
        client.service_client,
        namespace=client.namespace,
        plugins=[DurableReactPlugin(settings=settings, store=s3_store)],
    )
    address, queue = client.service_client.config.target_host, f"many-{uuid.uuid4().hex[:8]}"
    gates = tmp_path / "gates"
    gates.mkdir()
    env = worker_env(s3_store, gates)
    first = WorkerProcess("a", address, queue, env, tmp_path)
    second: WorkerProcess | None = None
    try:
        async with asyncio.timeout(SAFETY_BOUND_S):
            await first.polling()
            subjects = await start_subjects(shared, queue, s3_store)
            assert await held_by(gates, subjects) == {first.pid}  # every run is mid tool call on A
            second = WorkerProcess("b", address, queue, env, tmp_path)
            await second.polling()
            first.kill()
            outcomes = await asyncio.gather(*(finish(shared, queue, s3_store, s) for s in subjects))
    finally:
        first.kill()
        if second is not None:
            second.process.terminate()
            second.process.wait(timeout=30)
    assert second is not None
    assert outcomes == [subject.answer for subject in subjects]
    for subject in subjects:
        history = await shared.get_workflow_handle(subject.run_id).fetch_history()
        await check_run(subject.run_id, history, subject, second.pid, s3_store)


async def check_run(
    workflow_id: str, history: WorkflowHistory, subject: Subject, survivor: int, store: S3BlobStore
) -> None:
    """The run's thread, claim-checked payloads and message cache after the kill."""
    [completed] = events_of(history, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    [result_payload] = completed.workflow_execution_completed_event_attributes.result.payloads
    result = json.loads(await payload_data(result_payload, store))
    entries, first_seq = result["entries"], result.get("first_seq", 0)
    assert [e["seq"] for e in entries] == list(range(first_seq, first_seq + len(entries))), workflow_id
    messages = [
        (e["payload"]["role"], e["payload"].get("content", "")) for e in entries if e["kind"] == "ai_message"
    ]
    assert [role for role, _ in messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert messages[0][1] == f"Go {subject.tag}."
    assert json.loads(messages[2][1])["result"] == "x" * HUGE
    assert json.loads(messages[4][1])["result"] == f"released {subject.tag} by worker {survivor}"
    assert messages[5][1] == subject.answer
    # Claim-checked: the large tool result and the large result are references in history, their
    # bytes in the shared store (written by A and by B respectively).
    tool_results = [
        event.activity_task_completed_event_attributes.result.payloads[0]
        for event in events_of(history, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    ]
    digests = [claim_digest_of(result_payload), *(claim_digest_of(p) for p in tool_results)]
    stored = [d for d in digests if d is not None]
    assert claim_digest_of(result_payload) is not None and len(stored) >= 3, workflow_id
    assert all([await store.has(digest) for digest in stored])
    # The message cache is shared: the last LLM call ran on the survivor, which had seen none of
    # the earlier messages, and named them by digest (none was resent inline after a cache miss).
    scheduled = {
        event.event_id: event.activity_task_scheduled_event_attributes
        for event in events_of(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        if event.activity_task_scheduled_event_attributes.activity_type.name == "llm_call"
    }
    assert len(scheduled) == 3, workflow_id
    last = max(scheduled)
    [started] = [
        event.activity_task_started_event_attributes
        for event in events_of(history, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
        if event.activity_task_started_event_attributes.scheduled_event_id == last
    ]
    assert started.identity.startswith(f"{survivor}@")
    request = json.loads(await payload_data(scheduled[last].input.payloads[0], store))
    assert request.get("prefix") or any("ref" in m for m in request.get("messages", [])), request
    assert not events_of(history, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED)
