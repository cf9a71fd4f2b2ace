"""Crash recovery, counted: kill -9 the worker at chosen points of real runs, kill and restart the server.

    .venv/bin/python -m bench.crash               # 9 worker kills (27 runs), a server restart (4 runs)
    .venv/bin/python -m bench.crash --rounds 3 --timeout 300

Everything is real and on 127.0.0.1: a `temporal server start-dev` with a SQLite file
(`hosting.dev_server.ensure_dev_server`), the product's `worker.py` as a separate process
(workflow cache on; tools from `tests.agent_tools`), the scripted model. Each round starts
two runs and one session ask and waits until all three reach the round's point: mid LLM
call, mid tool (after its side effect), or right after the first tool round. There it
steers each with an Update and kills the worker with SIGKILL (at the iteration boundary:
kills first, and the Update waits for the next worker), steers each again with a signal
while no worker runs, and starts a new worker. The last round kills the dev server
(SIGKILL) while tools run and starts it again on the same database. Then it audits every
thread, the side-effect log of the `record_effect` tool (one line per execution, with its
idempotency key) and the steers, and prints one table. Exit code 1 when anything is off.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench._crash_audit import Subject, audit_table
from bench._dev_server import BenchError, wait_for_server
from bench._process_stack import Stack, machine

POINTS = ("mid LLM call", "mid tool, after its side effect", "right after a tool round")
ROUND_TIMEOUT_S = 240.0


def script(tag: str, point: str) -> list[dict[str, Any]]:
    """Two tool rounds (a side effect, then a side effect and a calculation), then the answer.

    The answer is repeated: input that arrives while the model answers continues the run.
    """
    first_delay, first_tool_s = {POINTS[0]: (5.0, 0.2), POINTS[1]: (0.0, 5.0), POINTS[2]: (0.0, 0.3)}[point]

    def effect(call: str, seconds: float) -> dict[str, Any]:
        arguments = {"label": f"{tag}-{call}", "seconds": seconds}
        return {"name": "record_effect", "arguments": arguments, "id": f"{tag}-{call}"}

    calc = {"name": "calculator", "arguments": {"expression": "6 * 7"}, "id": f"{tag}-c"}
    return [
        {"tool_calls": [effect("a", first_tool_s)], "delay_s": first_delay},
        {"tool_calls": [effect("b", 0.2), calc], "delay_s": 1.0},
        *[{"content": f"done {tag}"}] * 4,
    ]


def agent_config(tag: str, point: str) -> dict[str, Any]:
    """The run's config: short tool timeouts so a killed attempt is retried soon."""
    return {
        "model": "scripted",
        "script": script(tag, point),
        "tools": ["record_effect", "calculator"],
        "tool_timeout_s": 8,
        "tool_max_retries": 4,
        "llm_max_attempts": 6,
    }


async def reached(client: Any, subject: Subject, point: str, stack: Stack) -> bool:
    """Whether the subject's run is at the round's point."""
    if point == POINTS[1]:
        return f"{subject.tag}-a" in stack.effects_by_label()
    trace = await client.get_workflow_handle(subject.run_workflow_id).query("trace")
    kinds = [event["kind"] for event in trace["events"]]
    if point == POINTS[0]:
        return "llm_started" in kinds and "llm_completed" not in kinds
    return "tool_completed" in kinds


async def start_subject(client: Any, stack: Stack, point: str, via_session: bool) -> Subject:
    """Start a run (or a session's ask) at the round's point."""
    from temporalio.client import WithStartWorkflowOperation
    from temporalio.common import WorkflowIDConflictPolicy

    tag = f"{'s' if via_session else 'r'}{uuid.uuid4().hex[:8]}"
    config = agent_config(tag, point)
    if not via_session:
        handle = await client.start_workflow(
            "ReActRun", {"query": f"Go {tag}.", "config": config}, id=f"crash-{tag}", task_queue=stack.queue
        )
        return Subject(tag, point, handle.id, handle.id, session=False)
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "AgentSession",
        {"agent_id": "crash", "config": {**config, "script": []}},
        id=f"crash-{tag}",
        task_queue=stack.queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    accepted = await client.execute_update_with_start_workflow(
        "ask",
        {"query": f"Go {tag}.", "overrides": {"script": config["script"]}},
        start_workflow_operation=start,
    )
    subject = Subject(tag, point, f"crash-{tag}", accepted["run_workflow_id"], session=True)
    subject.request_id = accepted["request_id"]
    return subject


async def until(condition: Any, timeout_s: float, what: str) -> None:
    """Poll an async condition (errors count as not yet) until it holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if await condition():
                return
        except Exception:  # a query during a restart may fail: ask again
            pass
        await asyncio.sleep(0.05)
    raise BenchError(f"{what} did not happen within {timeout_s:g} s")


async def finish(client: Any, subject: Subject) -> None:
    """Wait for the subject's result and read its thread."""
    handle = client.get_workflow_handle(subject.workflow_id)
    if subject.session:
        subject.result = await handle.execute_update("await_result", {"request_id": subject.request_id})
        entries: list[dict[str, Any]] = []
        since: int | None = 0
        while since is not None:
            page = await handle.query("thread", {"since_seq": since})
            entries += page["entries"]
            since = page["next_seq"]
        subject.entries = entries
    else:
        subject.result = await handle.result()
        subject.entries = subject.result["entries"]


async def crash_round(
    client: Any, stack: Stack, point: str, kill_server: bool, subjects: list[Subject], count: int
) -> None:
    """Start `count` subjects (the last via a session) into `subjects`, crash at `point`, recover.

    Mid LLM call and mid tool (5 s windows), each subject is steered with an Update before the
    kill; at the iteration boundary the kill comes first and the Update waits for the new worker.
    Every subject is also steered with a signal while no worker runs.
    """
    for i in range(count):
        subjects.append(await start_subject(client, stack, point, i == count - 1))

    async def all_reached() -> bool:
        return all([await reached(client, subject, point, stack) for subject in subjects])

    async def steer_update(subject: Subject) -> None:
        content = f"update steer {subject.tag}"
        ack = await client.get_workflow_handle(subject.workflow_id).execute_update(
            "steer", {"content": content}
        )
        subject.steers.append((content, ack))

    await until(all_reached, 60, f"all runs reaching {point!r}")
    pending: list[asyncio.Task[None]] = []
    if point == POINTS[2] and not kill_server:
        stack.kill_worker()
        pending = [asyncio.create_task(steer_update(subject)) for subject in subjects]
    else:
        await asyncio.gather(*(steer_update(subject) for subject in subjects))
    if kill_server:
        stack.kill_server()
        await asyncio.sleep(1.0)
        await stack.start_server()
        await wait_for_server(stack.address)
    else:
        stack.kill_worker()
    for subject in subjects:
        handle = client.get_workflow_handle(subject.workflow_id)
        await until(lambda h=handle, t=subject.tag: _signal(h, t), 60, "a steer signal")
        subject.steers.append((f"signal steer {subject.tag}", None))
    if not kill_server:
        await stack.start_worker()
    await asyncio.wait_for(asyncio.gather(*pending, *(finish(client, s) for s in subjects)), ROUND_TIMEOUT_S)


async def _signal(handle: Any, tag: str) -> bool:
    await handle.signal("steer", {"content": f"signal steer {tag}"})
    return True


async def main(rounds: int, per_round: int, timeout_s: float) -> int:
    """Run the rounds, print the table; the exit code is 1 when anything was lost or duplicated."""
    work = Path(tempfile.mkdtemp(prefix="bench-crash-"))
    stack = Stack(work)
    os.environ["REACT_PAYLOAD_STORE"] = stack.env["REACT_PAYLOAD_STORE"]
    from hosting.connection import connect

    subjects: list[Subject] = []
    began = time.monotonic()
    try:
        await stack.start_server()
        worker_start_s = await stack.start_worker()
        client = await connect(stack.address)
        plan = [(POINTS[i % len(POINTS)], False) for i in range(rounds)] + [(POINTS[1], True)]
        for index, (point, kill_server) in enumerate(plan, 1):
            left = timeout_s - (time.monotonic() - began)
            if left <= 0:
                print(f"--timeout {timeout_s:g} s reached: {len(plan) - index + 1} rounds not run")
                break
            what = "server SIGKILL + restart" if kill_server else "worker SIGKILL + restart"
            print(f"round {index}/{len(plan)}: {what} at {point!r}", flush=True)
            done: list[Subject] = []
            try:
                await asyncio.wait_for(
                    crash_round(client, stack, point, kill_server, done, per_round + kill_server), left
                )
            except (BenchError, TimeoutError) as err:  # counted as not completed; the next round runs
                print(f"  round {index} failed: {err!r}", flush=True)
                if stack.worker is None:
                    await stack.start_worker()
                late = [finish(client, subject) for subject in done if not subject.result]
                await asyncio.wait_for(asyncio.gather(*late, return_exceptions=True), 60)
            for subject in done:
                subject.point = f"server restart ({point})" if kill_server else point
            subjects += done
    finally:
        stack.stop()
    table, clean = audit_table(subjects, stack.effects_by_label())
    print(f"\n{machine()}")
    print(f"worker start-up {worker_start_s:.1f} s, {stack.workers_started} worker processes, "
          f"{time.monotonic() - began:.0f} s in all\n")  # fmt: skip
    print(table)
    if clean:
        stack.remove_work()
    else:
        print(f"\nlogs and database in {work}")
    return 0 if clean else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9, help="worker-kill rounds (default 9)")
    parser.add_argument("--runs-per-round", type=int, default=3, help="subjects per round (default 3)")
    parser.add_argument("--timeout", type=float, default=1200, help="give up after this many seconds")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.rounds, args.runs_per_round, args.timeout)))
