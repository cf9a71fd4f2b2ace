"""Load, counted: N sessions at once, each with an ask, a steer during its run and a context op.

    .venv/bin/python -m bench.load                        # 200 sessions
    .venv/bin/python -m bench.load --sessions 50 --timeout 300
    .venv/bin/python -m bench.load --idle 1000 --sessions 100   # 1,000 idle sessions first

Real and on 127.0.0.1 only: a `temporal server start-dev` with a fresh SQLite file, the
product's `worker.py` as its own process (production settings: workflow cache on), the
scripted model. Every session, all started together: `ask` (update-with-start; the run
calls the `slow` tool for `--tool-s` seconds, then answers), a `steer` Update while
the run works, a `context_modify` Update (deferred until the run ends), `await_result`.
Then each session's thread is read back. It reports the asks completed, lost inputs (a
steer acked `queued` or an op acked `deferred`/`applied` that is not in the thread),
the latency from ask to result, and the worker's resident memory (sampled every 0.5 s).

With `--idle N`, N sessions first each take one quick turn (50 at a time) and are left idle:
the worker's memory and the server's database (its SQLite file and write-ahead log) are read
before them, after them, and after the active sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from bench._process_stack import Stack, machine

RSS_SAMPLE_S = 0.5


def rss_mib(pid: int) -> float:
    """The process's resident set size in MiB (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) / 1024


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def sample_rss(pid: int, samples: list[float], stop: asyncio.Event) -> None:
    """Append the worker's RSS every `RSS_SAMPLE_S` until `stop` is set."""
    while not stop.is_set():
        samples.append(rss_mib(pid))
        await asyncio.sleep(RSS_SAMPLE_S)


async def thread_of(handle: Any) -> list[dict[str, Any]]:
    """The session's whole thread (its `thread` query, page by page)."""
    entries: list[dict[str, Any]] = []
    since: int | None = 0
    while since is not None:
        page = await handle.query("thread", {"since_seq": since})
        entries += page["entries"]
        since = page["next_seq"]
    return entries


async def one_session(client: Any, queue: str, index: int, tool_s: float) -> dict[str, Any]:
    """Ask, steer, submit an op, await the result, read the thread; return what happened."""
    from temporalio.client import WithStartWorkflowOperation
    from temporalio.common import WorkflowIDConflictPolicy

    session_id = f"load-{index}-{uuid.uuid4().hex[:6]}"
    slow = {"name": "slow", "arguments": {"seconds": tool_s}, "id": "t1"}
    script = [{"tool_calls": [slow]}, *[{"content": f"answer {index}"}] * 2]
    config = {"model": "scripted", "script": [], "tools": ["slow"]}
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "AgentSession",
        {"agent_id": "load", "config": config},
        id=session_id,
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    began = time.monotonic()
    accepted = await client.execute_update_with_start_workflow(
        "ask",
        {"query": f"Question {index}?", "overrides": {"script": script}},
        start_workflow_operation=start,
    )
    asked = time.monotonic()
    handle = client.get_workflow_handle(session_id)
    steer = await handle.execute_update("steer", {"content": f"steer {index}"})
    steered = time.monotonic()
    messages = [{"role": "user", "content": f"summary {index}"}]
    op = {"op_id": f"op-{index}", "operation": {"type": "replace", "result_context": {"messages": messages}}}
    op_ack = await handle.execute_update("context_modify", op)
    submitted = time.monotonic()
    result = await handle.execute_update("await_result", {"request_id": accepted["request_id"]})
    latency = time.monotonic() - began
    entries = await thread_of(handle)
    input_ids = {entry["refs"].get("input_id") for entry in entries}
    op_ids = {entry["payload"].get("op_id") for entry in entries if entry["kind"] != "ai_message"}
    return {
        "latency": latency,
        "phases": (asked - began, steered - asked, submitted - steered, began + latency - submitted),
        "completed": result["outcome"]["status"] == "completed" and result["result"] == f"answer {index}",
        "steer": steer["status"] if steer["status"] == "queued" else steer.get("reason") or steer["status"],
        "steer lost": steer["status"] == "queued" and steer["input_id"] not in input_ids,
        "op": op_ack["status"],
        "op lost": op_ack["status"] in ("deferred", "applied") and f"op-{index}" not in op_ids,
    }


def percentile(values: list[float], pct: int) -> float:
    """The `pct`th percentile (inclusive method)."""
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


async def idle_session(client: Any, queue: str, index: int) -> None:
    """A session that takes one quick turn and is then left idle."""
    from temporalio.client import WithStartWorkflowOperation
    from temporalio.common import WorkflowIDConflictPolicy

    session_id = f"idle-{index}-{uuid.uuid4().hex[:6]}"
    config = {"model": "scripted", "script": [{"content": f"idle {index}"}]}
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "AgentSession",
        {"agent_id": "idle", "config": config},
        id=session_id,
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    accepted = await client.execute_update_with_start_workflow(
        "ask", {"query": f"Hello {index}"}, start_workflow_operation=start
    )
    handle = client.get_workflow_handle(session_id)
    await handle.execute_update("await_result", {"request_id": accepted["request_id"]})


def database_mib(work: Path) -> float:
    """The dev server's SQLite database with its write-ahead log, in MiB."""
    files = [work / "dev.db", work / "dev.db-wal", work / "dev.db-shm"]
    return sum(f.stat().st_size for f in files if f.exists()) / 2**20


async def main(sessions: int, tool_s: float, timeout_s: float, idle: int = 0) -> int:
    """Run the sessions, print the report; exit code 1 when an input was lost or an ask did not complete."""
    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    stack = Stack(work)
    os.environ["REACT_PAYLOAD_STORE"] = stack.env["REACT_PAYLOAD_STORE"]
    from hosting.connection import connect

    samples: list[float] = []
    stop = asyncio.Event()
    outcomes: list[dict[str, Any] | BaseException] = []
    try:
        await stack.start_server()
        await stack.start_worker()
        assert stack.worker is not None
        client = await connect(stack.address)
        # One session first, not counted: the worker loads litellm on its first LLM call.
        await one_session(client, stack.queue, -1, 0.0)
        idle_rows: list[tuple[str, str]] = []
        if idle:
            rss_before, db_before, idle_began = (
                rss_mib(stack.worker.pid),
                database_mib(work),
                time.monotonic(),
            )
            for first in range(0, idle, 50):
                await asyncio.gather(
                    *(idle_session(client, stack.queue, i) for i in range(first, min(idle, first + 50)))
                )
            idle_rows = [
                (f"{idle:,} idle sessions: created in", f"{time.monotonic() - idle_began:.0f} s"),
                ("worker RSS before / after them", f"{rss_before:.0f} / {rss_mib(stack.worker.pid):.0f} MiB"),
                ("server database before / after them", f"{db_before:.1f} / {database_mib(work):.1f} MiB"),
            ]
        db_active = database_mib(work)
        idle_rss = rss_mib(stack.worker.pid)
        assert stack.server is not None
        pids = {"worker": stack.worker.pid, "server": stack.server.pid, "bench": os.getpid()}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        sampler = asyncio.create_task(sample_rss(stack.worker.pid, samples, stop))
        began = time.monotonic()
        tasks = [asyncio.create_task(one_session(client, stack.queue, i, tool_s)) for i in range(sessions)]
        done, pending = await asyncio.wait(tasks, timeout=timeout_s)
        wall = time.monotonic() - began
        for task in pending:
            task.cancel()
        outcomes = [task.exception() or task.result() for task in done]
        stop.set()
        await sampler
        end_rss = rss_mib(stack.worker.pid)
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        db_end = database_mib(work)
    finally:
        stack.stop()
    results = [o for o in outcomes if isinstance(o, dict)]
    errors = Counter(type(o).__name__ for o in outcomes if isinstance(o, BaseException))
    latencies = [r["latency"] for r in results]
    steers = Counter(str(r["steer"]) for r in results)
    ops = Counter(str(r["op"]) for r in results)
    lost_steers, lost_ops = sum(r["steer lost"] for r in results), sum(r["op lost"] for r in results)
    completed = sum(r["completed"] for r in results)
    rows = [
        *idle_rows,
        ("sessions started at once", f"{sessions:,}"),
        ("asks completed", f"{completed:,} of {sessions:,} ({len(pending)} unfinished at the timeout)"),
        ("errors", ", ".join(f"{name} x{n}" for name, n in errors.items()) or "none"),
        ("steers acked", ", ".join(f"{k} {v}" for k, v in sorted(steers.items()))),
        ("lost inputs: steers acked `queued` not in the thread", str(lost_steers)),
        ("context ops acked", ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))),
        ("lost inputs: ops acked `deferred`/`applied` not in the thread", str(lost_ops)),
        ("latency ask -> result, p50 / p99 / max", _seconds(latencies)),
        ("median ask ack / steer ack / op ack / result after the op", _phases(results)),
        ("CPU s per completed ask: worker / dev server / this client", _per_ask(cpu, completed)),
        ("wall time, asks per second", f"{wall:.1f} s, {completed / wall:.2f} asks/s"),
        (
            "worker RSS: warm idle / peak / end",
            f"{idle_rss:.0f} / {max(samples, default=0):.0f} / {end_rss:.0f} MiB",
        ),
        ("server database before / after the active sessions", f"{db_active:.1f} / {db_end:.1f} MiB"),
    ]
    print(f"\n{machine()}; --idle {idle} --sessions {sessions} --tool-s {tool_s:g}\n")
    print("| | |\n|---|---|\n" + "\n".join(f"| {name} | {value} |" for name, value in rows))
    clean = completed == sessions and not lost_steers and not lost_ops
    if clean:
        stack.remove_work()
    else:
        print(f"\nlogs in {work}")
    return 0 if clean else 1


def _per_ask(cpu: dict[str, float], completed: int) -> str:
    share = [cpu[name] / max(completed, 1) for name in ("worker", "server", "bench")]
    return " / ".join(f"{value:.3f}" for value in share)


def _phases(results: list[dict[str, Any]]) -> str:
    if not results:
        return "-"
    medians = [statistics.median(r["phases"][i] for r in results) for i in range(4)]
    return " / ".join(f"{value:.2f} s" for value in medians)


def _seconds(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{percentile(values, 50):.2f} s / {percentile(values, 99):.2f} s / {max(values):.2f} s"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=200, help="sessions started at once (default 200)")
    parser.add_argument(
        "--tool-s", type=float, default=1.0, help="how long each run's tool takes (default 1)"
    )
    parser.add_argument("--timeout", type=float, default=600, help="stop waiting after this many seconds")
    parser.add_argument("--idle", type=int, default=0, help="idle sessions created first (default 0)")
    args = parser.parse_args()
    if platform.system() != "Linux":
        raise SystemExit("bench.load reads the worker's memory from /proc: Linux only")
    sys.exit(asyncio.run(main(args.sessions, args.tool_s, args.timeout, args.idle)))
