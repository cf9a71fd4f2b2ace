"""Durability: a worker killed mid-run, and the trace cap."""

from __future__ import annotations

import asyncio
import signal
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from contracts import RunResult, SteerInput
from tests.helpers import (
    call,
    messages,
    spawn_worker,
    start_run,
    started_llm_calls,
    trace_of,
    turn,
    wait_until,
)
from workflows.run.trace_log import REJECTION_SAMPLES, TRACE_CAP, TraceLog


async def test_worker_killed_mid_run_finishes_without_duplicates(
    env: WorkflowEnvironment, client: Client
) -> None:
    address = client.service_client.config.target_host
    queue = f"react-crash-{uuid.uuid4().hex[:8]}"
    script = [turn(tool_calls=[call("calculator", {"expression": "2 + 3"})]), turn("five", delay_s=3)]
    first = spawn_worker(address, queue)
    try:
        handle = await start_run(client, queue, script, tools=["calculator"])
        await wait_until(handle, lambda _s, t: started_llm_calls(t) == 2, timeout_s=60)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        second = spawn_worker(address, queue)
        try:
            result = await asyncio.wait_for(handle.result(), timeout=90)
            trace = await trace_of(handle)
        finally:
            second.terminate()
            second.wait(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
    assert result.status == "completed" and result.result == "five"
    assert messages(result.entries) == [
        ("user", "What is 6 * 7?"),
        ("assistant", ""),
        ("tool", '{"ok": true, "result": 5}'),
        ("assistant", "five"),
    ]
    assert [e.seq for e in result.entries] == [0, 1, 2, 3]
    # The interrupted LLM call was retried as the same activity, not started twice.
    assert [e.kind for e in trace.events].count("llm_started") == 2


async def test_a_flood_of_rejected_input_is_counted_and_silences_nothing(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("slow", delay_s=60)])
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    wrong = SteerInput(content="x", expected_request_id="not-this-run")
    flood = TRACE_CAP + 50
    for start in range(0, flood, 100):
        sent = min(start + 100, flood)
        await asyncio.gather(*(handle.signal("steer", wrong) for _ in range(start, sent)))
        # Paced: with no workflow cache every task and query replays all earlier signals, and a task
        # holding the whole flood at once can overrun the SDK's 2 s deadlock check on a loaded 2-core
        # machine. Only the trace is polled, so each poll is one replay.
        await _rejections_reach(handle, sent)
    await handle.cancel()
    result = await handle.result()
    assert result.status == "cancelled"
    trace = await trace_of(handle)
    kinds = [e.kind for e in trace.events]
    assert kinds.count("input_rejected") == REJECTION_SAMPLES, "only samples of a flood are recorded"
    assert trace.rejections == {"input_rejected": flood} and not trace.truncated
    assert kinds[0] == "request_started" and kinds[-1] == "request_cancelled"


async def _rejections_reach(handle: WorkflowHandle[Any, RunResult], count: int) -> None:
    deadline = asyncio.get_running_loop().time() + 30
    while (await trace_of(handle)).rejections.get("input_rejected") != count:
        assert asyncio.get_running_loop().time() < deadline, f"{count} rejections not counted in 30 s"
        await asyncio.sleep(0.1)


def test_a_flood_larger_than_the_trace_cap_keeps_every_lifecycle_event() -> None:
    log = TraceLog("r", "u")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    log.add("request_started", at, 0)
    for n in range(3 * TRACE_CAP):
        log.add("input_rejected" if n % 2 else "context_op_rejected", at, 0, data={"n": n})
        if n % 100 == 0:
            log.add("llm_started", at, n // 100)
    log.add("request_cancelled", at, 30)
    trace = log.snapshot()
    kinds = [e.kind for e in trace.events]
    assert trace.rejections == {
        "input_rejected": 3 * TRACE_CAP // 2,
        "context_op_rejected": 3 * TRACE_CAP // 2,
    }
    assert kinds.count("input_rejected") == kinds.count("context_op_rejected") == REJECTION_SAMPLES
    assert kinds.count("llm_started") == 3 * TRACE_CAP // 100 and not trace.truncated
    assert kinds[0] == "request_started" and kinds[-1] == "request_cancelled"


def test_the_trace_keeps_its_start_and_its_newest_events() -> None:
    log = TraceLog("r", "u", cap=10)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(25):
        log.add("llm_started", at, n)
    trace = log.snapshot()
    assert [e.iteration for e in trace.events] == [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]
    assert trace.truncated and trace.dropped == 15
