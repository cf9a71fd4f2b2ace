"""What one conversation turn costs, next to the two bare-Temporal floors, side by side in one run.

    .venv/bin/python -m bench.turn_cost                      # 10 sequential turns, then 50 at once
    .venv/bin/python -m bench.turn_cost --turns 10 --concurrent 100 --long-turns 3
    .venv/bin/python -m bench.turn_cost --concurrent 100 --workers 2   # then 100 at once on 2 workers

Real and on 127.0.0.1 only: a `temporal server start-dev` (SQLite), the product's `worker.py`
in its own process, the floors' worker (`bench/turn_floors.py`) in another, and this process as
the client (the typed client for ours, a plain Temporal client for the floors). Rows:

- **bare turn**: an Update on a long-lived workflow that runs one activity returning the answer
  (400 characters);
- **session floor**: an Update on a session-like workflow that starts a child run workflow
  running that activity; the client awaits the child's result;
- **ours, unstreamed**: `SessionHandle.ask` on a session, then `RunHandle.result()` (the
  scripted model answers the same 400 characters at once);
- **ours, unstreamed, memory recall**: the same agent with `memory.recall` 3 and tools off: each
  run searches the store for its query (`memory_recall`, one activity) before its LLM call, over
  `RECALL_ITEMS` items the benchmark put in the worker's store (its own SQLite file) first; the
  benchmark prints what recall adds to the unstreamed row: worker CPU and history events a turn;
- **ours, streamed 400 chars**: the same, followed with `RunHandle.events()`, the scripted model
  streaming 4 characters every 5 ms;
- **ours, streamed 2,000 tokens**: 8,000 characters the same way (about 10 s a turn; `--long-turns`),
  against the floors answering 8,000 characters;
- **ours via gateway, a version made at run time**: the same gateway ask to `made-at-run-time@1`,
  an agent made at run time (`POST /api/agents`) with the code profile's config, which the gateway
  reads from the store on each ask: what a version lookup adds (target: at most 1.02x worker CPU);
- with a second `worker.py` writing to a live channel (a `redis-server` the benchmark starts) and
  the client reading it, the streamed rows again (**live channel**), and each through `gateway.py`.

The scripted model's own streaming (one event-loop wake a chunk, which a provider's stream costs
too) is measured in this process with no Temporal, and printed taken off the streamed rows' worker
CPU: what streaming costs the product.

Per turn, over the sequential turns of one conversation each: history events (the session's
events the turn added plus its run's), billed actions (the history events a hosted Temporal
bills: workflow and child starts, Updates, signals, activities, timers, search-attribute upserts,
local activities; plus the queries the client sent, counted by a client interceptor; activity
heartbeats are billed too but are not in history and not counted), the worker process's CPU
and the dev server's (from /proc, over the turns, divided by them), time to first token (the
first delta at the client; unstreamed rows: the answer) and time to the answer. Ratios are
against the session floor answering as many characters. Then `--concurrent` conversations take
one turn each at once (each conversation has had a turn before): p50 and p99 time to the answer;
with `--workers N`, again with N worker processes of each kind (the floors', ours, the live one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    WorkflowHandle,
)

from bench._dev_server import BenchError, die_with_parent
from bench._process_stack import REPO, Stack, machine
from bench.gateway import cpu_s, start_gateway
from bench.gateway_agents import ANSWER as GATEWAY_ANSWER
from bench.gateway_agents import streamed_agent
from bench.live import answer_turn
from bench.turn_floors import BARE_TURN, SESSION_FLOOR
from clients.errors import RejectedError
from clients.memory import Memory
from clients.runs import Runs
from clients.session_handle import SessionHandle
from clients.sessions import Sessions
from contracts import AgentConfig, ScriptTurn
from contracts.errors import BUSY
from contracts.memory import MemoryConfig
from contracts.session import AskAccepted
from contracts.stream import DeltaEvent
from hosting.connection import connect
from live.channel import LIVE_URL_ENV
from live.dev_redis import free_port, start_redis

RECALL_ITEMS = 500
"""Memory items the recall row's store holds (the local principal's, in its agent's namespace)."""
RECALL_NAMESPACE = "bench-recall"
RECALL_MEMORY = MemoryConfig(tools=False, recall=3, namespace=RECALL_NAMESPACE)
SHORT = 400
LONG = 8_000
ANSWER = ("word " * (LONG // 5 + 1))[:LONG]
SETTLE_S = 0.3
"""Wait after the last turn before reading CPU, so work a turn leaves behind is charged to it."""

BILLED: dict[int, str] = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "starts",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "updates",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "signals",
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activities",
    EventType.EVENT_TYPE_TIMER_STARTED: "timers",
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "upserts",
}


class QueryCounter(Interceptor):
    """Counts the queries a client sends (a hosted Temporal bills each)."""

    def __init__(self) -> None:
        self.count = 0

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        """Count each query, then send it on."""
        counter = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                counter.count += 1
                return await super().query_workflow(input)

        return Counting(next)


@dataclass
class Turn:
    """One turn at the client: seconds to the first token (None: unstreamed) and to the answer."""

    first: float | None
    answer: float
    runs: list[str]


@dataclass
class Conversation:
    """One conversation of a row: its workflow id and the runs its turns started."""

    workflow_id: str
    runs: list[str] = field(default_factory=list[str])


@dataclass
class Row:
    """One row: how to open a conversation and take a turn, and whose worker does the work."""

    label: str
    worker_pid: int
    open: Callable[[], Awaitable[Conversation]]
    turn: Callable[[Conversation], Awaitable[Turn]]
    queries: QueryCounter
    figures: dict[str, float] = field(default_factory=dict[str, float])
    latencies: list[float] = field(default_factory=list[float])
    live_url: str | None = None
    """The live channel this row's worker writes to and its client reads (None: none)."""
    gateway_pid: int | None = None
    """The gateway process this row's turns go through (None: the typed client)."""
    stream_size: int | None = None
    """The characters a streamed row's model streams (None: unstreamed, or a floor)."""
    floor: str = "session floor"
    """The row its ratios are against: the session floor answering as many characters."""

    @contextlib.contextmanager
    def client_env(self) -> Iterator[None]:
        """The client's environment for this row: `REACT_LIVE_URL` set only for a live row."""
        if self.live_url is None:
            yield
            return
        os.environ[LIVE_URL_ENV] = self.live_url
        try:
            yield
        finally:
            os.environ.pop(LIVE_URL_ENV, None)


def floor_rows(plain: Client, queue: str, pid: int, queries: QueryCounter, size: int = SHORT) -> list[Row]:
    """The bare turn and the session floor, on the floors' worker, answering `size` characters."""

    async def open_bare() -> Conversation:
        handle = await plain.start_workflow(BARE_TURN, id=f"bare-{uuid.uuid4().hex[:10]}", task_queue=queue)
        return Conversation(handle.id)

    async def bare(conversation: Conversation) -> Turn:
        began = time.perf_counter()
        text: str = await plain.get_workflow_handle(conversation.workflow_id).execute_update(  # pyright: ignore[reportUnknownMemberType]
            "turn", size, result_type=str
        )
        if len(text) != size:
            raise BenchError("the bare turn's answer differs")
        return Turn(None, time.perf_counter() - began, [])

    async def open_session_floor() -> Conversation:
        handle = await plain.start_workflow(
            SESSION_FLOOR, id=f"floor-{uuid.uuid4().hex[:10]}", task_queue=queue
        )
        return Conversation(handle.id)

    async def session_floor(conversation: Conversation) -> Turn:
        began = time.perf_counter()
        child: str = await plain.get_workflow_handle(conversation.workflow_id).execute_update(  # pyright: ignore[reportUnknownMemberType]
            "ask", size, result_type=str
        )
        text: str = await plain.get_workflow_handle(child).result()
        if len(text) != size:
            raise BenchError("the session floor's answer differs")
        return Turn(None, time.perf_counter() - began, [child])

    suffix = "" if size == SHORT else f", {size:,} chars"
    return [
        Row(f"bare turn{suffix}", pid, open_bare, bare, queries),
        Row(f"session floor{suffix}", pid, open_session_floor, session_floor, queries),
    ]


def our_row(
    label: str,
    client: Client,
    queue: str,
    pid: int,
    queries: QueryCounter,
    size: int,
    stream: bool,
    memory: MemoryConfig | None = None,
) -> Row:
    """Our session ask: unstreamed (`result()`), or streamed and followed (`events()`, then `result()`).

    `memory`: the agent's memory (recall before the LLM call).
    """
    sessions, runs = Sessions(client, task_queue=queue), Runs(client, task_queue=queue)
    content = ANSWER[:size]
    agent = AgentConfig(model="scripted", script=[answer_turn(content, stream)], stream=stream)
    if not stream:  # answered at once, like the floors' activity
        agent = AgentConfig(model="scripted", script=[ScriptTurn(content=content)], memory=memory)

    async def open_ours() -> Conversation:
        return Conversation(f"bench-turn-{uuid.uuid4().hex[:10]}")

    async def ours(conversation: Conversation) -> Turn:
        began = time.perf_counter()
        session = sessions.get(conversation.workflow_id)
        accepted = await ask(session, agent)
        run = runs.get(accepted.run_workflow_id)
        first: float | None = None
        if stream:
            async for event in run.events():
                if first is None and isinstance(event, DeltaEvent) and event.text:
                    first = time.perf_counter() - began
        result = await run.result()
        if result.answer != content:
            raise BenchError(f"{label}: the answer differs ({accepted.run_workflow_id})")
        return Turn(first, time.perf_counter() - began, [accepted.run_workflow_id])

    return Row(label, pid, open_ours, ours, queries, stream_size=size if stream else None)


RECALL_ROW = "ours, unstreamed, memory recall"
TOPICS = ("tea", "trains", "cats", "Lyon", "jazz", "hiking", "chess", "bread", "rain", "maps")


async def seed_memory(url: str) -> None:
    """`RECALL_ITEMS` short items in the recall row's namespace (the local principal's)."""
    memory = Memory(url)
    try:
        for i in range(RECALL_ITEMS):
            topic = TOPICS[i % len(TOPICS)]
            await memory.put(RECALL_NAMESPACE, f"item-{i}", f"Likes {topic}, note {i}: a story about {topic}")
    finally:
        await memory.close()


def recall_lines(rows: list[Row]) -> None:
    """What recall adds to the unstreamed turn: worker CPU, history events and time to the answer."""
    by_label = {row.label: row for row in rows}
    plain, recall = by_label["ours, unstreamed"].figures, by_label[RECALL_ROW].figures
    print(
        f"\nmemory recall over {RECALL_ITEMS} items, next to the unstreamed turn: worker CPU "
        f"{recall['worker_ms']:.1f} ms a turn, {recall['worker_ms'] / plain['worker_ms']:.2f}x "
        f"{plain['worker_ms']:.1f} ms (target at most 1.10x); history events {recall['events']:g}, "
        f"{recall['events'] - plain['events']:+g} (target: one activity's); answer "
        f"{recall['answer_ms']:.0f} ms, {recall['answer_ms'] - plain['answer_ms']:+.0f} ms"
    )


RUNTIME_AGENT = "made-at-run-time"
VERSIONED_ROW = "ours via gateway, a version made at run time"


async def make_runtime_agent(http: httpx.AsyncClient, url: str) -> None:
    """The code profile `default`'s config as version 1 of an agent made at run time (in the store)."""
    config = streamed_agent().model_dump(mode="json", exclude_defaults=True)
    made = await http.post(f"{url}/api/agents", json={"name": RUNTIME_AGENT, "config": config})
    if made.status_code != 201:
        raise BenchError(f"the agent made at run time was refused: {made.text}")


def version_lines(rows: list[Row]) -> None:
    """What looking a version up adds to an ask through the gateway: worker and gateway CPU, answer."""
    by_label = {row.label: row for row in rows}
    profile, version = by_label["ours via gateway, streamed 400"].figures, by_label[VERSIONED_ROW].figures
    print(
        f"\na version made at run time (`{RUNTIME_AGENT}@1`, read from the store) next to the code "
        f"profile, through the gateway: worker CPU {version['worker_ms']:.1f} ms a turn, "
        f"{version['worker_ms'] / profile['worker_ms']:.2f}x {profile['worker_ms']:.1f} ms (target at most "
        f"1.02x); the gateway's CPU {version['gateway_ms']:.1f} ms, "
        f"{version['gateway_ms'] / profile['gateway_ms']:.2f}x; "
        f"answer {version['answer_ms']:.0f} ms, {version['answer_ms'] - profile['answer_ms']:+.0f} ms"
    )


async def ask(session: SessionHandle, agent: AgentConfig) -> AskAccepted:
    """Ask; a `busy` refusal is asked again (the session has not applied the last run's end yet).

    `SessionHandle.ask` retries such a refusal for 2 s; under the concurrent phase's load the
    session can take longer to apply the run's end.
    """
    while True:
        try:
            return await session.ask("Tell me a story.", config=agent)
        except RejectedError as refusal:
            if refusal.code != BUSY:
                raise
            await asyncio.sleep(0.05)


def gateway_row(
    label: str,
    url: str,
    http: httpx.AsyncClient,
    reader: Client,
    worker_pid: int,
    gateway_pid: int,
    agent: str = "default",
) -> Row:
    """Our session ask through the gateway: an AG-UI POST per turn to `agent`, read to RUN_FINISHED.

    The gateway's own queries (its hub's reads) are billed too but are not counted (another process).
    """

    async def open_thread() -> Conversation:
        return Conversation(f"gw/local/{agent.split('@')[0]}/turn-{uuid.uuid4().hex[:10]}")  # a pin is no id

    async def through_gateway(conversation: Conversation) -> Turn:
        thread = conversation.workflow_id.rsplit("/", 1)[1]
        message = {"id": uuid.uuid4().hex, "role": "user", "content": "Tell me a story."}
        body = {"threadId": thread, "runId": uuid.uuid4().hex, "messages": [message]}
        began = time.perf_counter()
        while True:  # a `busy` refusal (the session has not applied the last run's end) is asked again
            first, text, finished, busy = None, "", False, False
            async with http.stream("POST", f"{url}/agui/{agent}", json=body) as response:
                if response.status_code >= 400:
                    refusal = (await response.aread()).decode()
                    if "busy" not in refusal:
                        raise BenchError(f"{label}: the gateway refused: {refusal}")
                    busy = True
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    event = json.loads(line[5:])
                    if event["type"] == "TEXT_MESSAGE_CONTENT":
                        first = first or time.perf_counter() - began
                        text += event["delta"]
                    finished = finished or event["type"] == "RUN_FINISHED"
                    busy = busy or (event["type"] == "RUN_ERROR" and "busy" in json.dumps(event))
            if not busy:
                break
            body["runId"] = uuid.uuid4().hex
            await asyncio.sleep(0.05)
        answered = time.perf_counter() - began
        if text != GATEWAY_ANSWER or not finished:
            raise BenchError(f"{label}: the answer differs or did not finish ({conversation.workflow_id})")
        records = await Sessions(reader).get(conversation.workflow_id).requests()
        return Turn(first, answered, [records[-1].run_workflow_id])

    size = len(GATEWAY_ANSWER)
    row = Row(label, worker_pid, open_thread, through_gateway, QueryCounter(), stream_size=size)
    row.gateway_pid = gateway_pid
    return row


async def history(client: Client, workflow_id: str) -> list[HistoryEvent]:
    """Every event of a workflow's history (its latest run)."""
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(workflow_id)
    return list((await handle.fetch_history()).events)


def billed(events: list[HistoryEvent]) -> Counter[str]:
    """The billed actions among `events`, by kind (local activities: their markers)."""
    kinds: Counter[str] = Counter()
    for event in events:
        kind = BILLED.get(event.event_type)
        if kind is None and event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            if "local_activity" in event.marker_recorded_event_attributes.marker_name:
                kind = "local activities"
        if kind is not None:
            kinds[kind] += 1
    return kinds


async def sequential(row: Row, client: Client, address_pid: int, turns: int) -> None:
    """`turns` turns of one conversation (after a warm-up turn); the figures per turn."""
    with row.client_env():
        await _sequential(row, client, address_pid, turns)


async def _sequential(row: Row, client: Client, address_pid: int, turns: int) -> None:
    conversation = await row.open()
    await row.turn(conversation)  # warm-up, and the session exists before counting
    await asyncio.sleep(SETTLE_S)  # the warm-up's last session events (its first patch markers) land first
    before = len(await history(client, conversation.workflow_id))
    queries = row.queries.count
    worker, server = cpu_s(row.worker_pid), cpu_s(address_pid)
    gateway = cpu_s(row.gateway_pid) if row.gateway_pid else 0.0
    measured = [await row.turn(conversation) for _ in range(turns)]
    await asyncio.sleep(SETTLE_S)
    worker, server = cpu_s(row.worker_pid) - worker, cpu_s(address_pid) - server
    gateway = cpu_s(row.gateway_pid) - gateway if row.gateway_pid else 0.0
    queries = row.queries.count - queries
    events = (await history(client, conversation.workflow_id))[before:]
    for turn in measured:
        for run in turn.runs:
            events += await history(client, run)
    actions = billed(events)
    firsts = [t.first if t.first is not None else t.answer for t in measured]
    row.figures = {
        "events": len(events) / turns,
        "actions": (sum(actions.values()) + queries) / turns,
        "worker_ms": worker / turns * 1e3,
        "server_ms": server / turns * 1e3,
        "first_ms": statistics.median(firsts) * 1e3,
        "answer_ms": statistics.median(t.answer for t in measured) * 1e3,
        **{f"n_{kind}": count / turns for kind, count in actions.items()},
        "n_queries": queries / turns,
        **({"gateway_ms": gateway / turns * 1e3} if row.gateway_pid else {}),
    }


async def concurrent(row: Row, count: int) -> None:
    """`count` conversations (each after one turn) take a turn at once: their times to the answer."""
    with row.client_env():
        conversations = await asyncio.gather(*(row.open() for _ in range(count)))
        await asyncio.gather(*(row.turn(c) for c in conversations))
        turns = await asyncio.gather(*(row.turn(c) for c in conversations))
    row.latencies = [t.answer for t in turns]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def report(
    rows: list[Row], turns: int, long_turns: int, count: int, *, sequential_table: bool = True
) -> None:
    if sequential_table:
        per_turn(rows, turns, long_turns)
    if count:
        at_once(rows, count)


def per_turn(rows: list[Row], turns: int, long_turns: int) -> None:
    floors = {r.label: r.figures for r in rows}
    print(
        f"\nPer turn ({turns} sequential turns each; the 8,000-character rows {long_turns}), x the session "
        "floor answering as many characters"
    )
    head = (
        "turn",
        "events",
        "x",
        "actions",
        "x",
        "worker ms",
        "x",
        "server ms",
        "x",
        "TTFT p50",
        "answer p50",
    )
    widths = (30, 7, 5, 8, 5, 10, 5, 10, 5, 9, 11)
    print("  " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    for row in rows:
        f, floor = row.figures, floors[row.floor]
        cells = (
            row.label,
            f"{f['events']:.1f}",
            f"{f['events'] / floor['events']:.2f}",
            f"{f['actions']:.1f}",
            f"{f['actions'] / floor['actions']:.2f}",
            f"{f['worker_ms']:.1f}",
            f"{f['worker_ms'] / floor['worker_ms']:.2f}",
            f"{f['server_ms']:.1f}",
            f"{f['server_ms'] / floor['server_ms']:.2f}",
            f"{f['first_ms']:.0f} ms",
            f"{f['answer_ms']:.0f} ms",
        )
        print("  " + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    for row in rows:
        if "gateway_ms" in row.figures:
            print(f"  {row.label}: the gateway's CPU {row.figures['gateway_ms']:.1f} ms per turn")
    print("\nBilled actions per turn, by kind")
    kinds = sorted({k for row in rows for k in row.figures if k.startswith("n_")})
    print("  " + f"{'turn':>30} " + " ".join(f"{k[2:]:>10}" for k in kinds))
    for row in rows:
        print("  " + f"{row.label:>30} " + " ".join(f"{row.figures.get(k, 0.0):>10.1f}" for k in kinds))


def at_once(rows: list[Row], count: int) -> None:
    if count:
        base = statistics.median(next(r for r in rows if r.label == "session floor").latencies)
        print(f"\n{count} turns at once (each conversation its own workflow), time to the answer")
        for row in rows:
            if row.latencies:
                p50 = statistics.median(row.latencies)
                p99 = percentile(row.latencies, 0.99)
                print(
                    f"  {row.label:>30}  p50 {p50 * 1e3:7.0f} ms  p99 {p99 * 1e3:7.0f} ms  x{p50 / base:.2f}"
                )


async def model_stream_ms(size: int) -> float:
    """CPU of the scripted model streaming `size` characters into a sink that drops every fragment.

    As the streamed rows ask it, in this process, with no Temporal and no channel. That pacing (one
    event-loop wake a chunk) is the model's own work, which a real provider's stream costs too (a
    read a chunk); a worker's figure less it is what streaming costs the product.
    """
    from activities.llm.models import scripted
    from contracts.llm import LLMRequest, ScriptedCall, StreamTarget
    from conversation import Message

    turn = answer_turn(ANSWER[:size], True)
    request = LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="Tell me.")],
        scripted=ScriptedCall(index=0, length=1, turn=turn),
        stream=StreamTarget(call=0),
    )
    began = time.process_time()
    await scripted.complete(request, 1, lambda _fragment: None)
    return (time.process_time() - began) * 1e3


def model_lines(rows: list[Row], model_ms: dict[int, float]) -> None:
    """The streamed rows' worker CPU less the model's own streaming, against the floor."""
    floors = {r.label: r.figures["worker_ms"] for r in rows}
    for size, ms in model_ms.items():
        print(f"  the scripted model's own streaming of {size:,} characters (no Temporal): {ms:.0f} ms CPU")
    for row in rows:
        size = row.stream_size
        if size is None or size not in model_ms:
            continue
        less = row.figures["worker_ms"] - model_ms[size]
        ratio = less / floors[row.floor]
        print(f"  {row.label}: worker CPU less the model's streaming {less:.0f} ms, x{ratio:.2f}")


async def start_process(
    stack: Stack, name: str, command: list[str], env: dict[str, str], ready: bytes
) -> subprocess.Popen[bytes]:
    """A process of the benchmark's (dies with it), once its log shows `ready`; its log in `name`.log."""
    log_path = stack.work / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: ASYNC220 (returns at once)
            die_with_parent(command), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    for _ in range(900):
        if ready in log_path.read_bytes():
            return process
        if process.poll() is not None:
            break
        await asyncio.sleep(0.1)
    raise BenchError(f"{name} did not start; see {log_path}")


async def start_floors(stack: Stack, name: str = "floors") -> subprocess.Popen[bytes]:
    """The floors' worker process, polling its own task queue."""
    command = [sys.executable, "-m", "bench.turn_floors", "--address", stack.address]
    command += ["--task-queue", f"{stack.queue}-floors"]
    return await start_process(stack, name, command, stack.env, b"polling task queue")


async def start_product_worker(
    stack: Stack, queue: str, name: str, live_url: str | None = None
) -> subprocess.Popen[bytes]:
    """A `worker.py` on `queue` (writing to the live channel at `live_url`, if any)."""
    command = [sys.executable, "worker.py", "--address", stack.address, "--task-queue", queue]
    env = {**stack.env, **({LIVE_URL_ENV: live_url} if live_url else {})}
    return await start_process(stack, name, command, env, b"worker polling task queue")


async def main(turns: int, long_turns: int, count: int, workers: int) -> int:
    print(f"# bench.turn_cost: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as work:
        stack = Stack(Path(work))
        floors: subprocess.Popen[bytes] | None = None
        live: subprocess.Popen[bytes] | None = None
        redis: subprocess.Popen[bytes] | None = None
        gateways: list[subprocess.Popen[bytes]] = []
        extra: list[subprocess.Popen[bytes]] = []
        http: httpx.AsyncClient | None = None
        try:
            store_url = f"sqlite:///{Path(work) / 'memory.db'}"
            stack.env["REACT_STORE_URL"] = store_url
            await seed_memory(store_url)
            await stack.start_server()
            await stack.start_worker()
            floors = await start_floors(stack)
            port = free_port()
            redis = start_redis(port)
            url = f"redis://127.0.0.1:{port}/0"
            live_queue = f"{stack.queue}-live"
            live = await start_product_worker(stack, live_queue, "live-worker", url)
            gateway, gateway_url = await start_gateway(stack)
            gateways.append(gateway)
            queue, folder = stack.queue, stack.work
            # The second gateway follows runs on the channel, in front of the live worker.
            stack.env[LIVE_URL_ENV], stack.queue, stack.work = url, live_queue, folder / "live"
            stack.work.mkdir()
            try:
                gateway_live, gateway_live_url = await start_gateway(stack)
            finally:
                stack.queue, stack.work = queue, folder
                stack.env.pop(LIVE_URL_ENV)
            gateways.append(gateway_live)
            http = httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=None))
            assert stack.server is not None and stack.worker is not None
            ours_queries, floor_queries = QueryCounter(), QueryCounter()
            client = await connect(stack.address)
            config = client.config()
            config["interceptors"] = [ours_queries]
            client = Client(**config)
            plain = await Client.connect(stack.address, interceptors=[floor_queries])
            pid = stack.worker.pid
            rows = [
                *floor_rows(plain, f"{stack.queue}-floors", floors.pid, floor_queries),
                our_row("ours, unstreamed", client, stack.queue, pid, ours_queries, SHORT, False),
                our_row(RECALL_ROW, client, stack.queue, pid, ours_queries, SHORT, False, RECALL_MEMORY),
                our_row("ours, streamed 400 chars", client, stack.queue, pid, ours_queries, SHORT, True),
            ]
            live_row = our_row(
                "ours, streamed 400, live channel", client, live_queue, live.pid, ours_queries, SHORT, True
            )
            live_row.live_url = url
            rows.append(live_row)
            reader = await connect(stack.address)
            rows.append(
                gateway_row("ours via gateway, streamed 400", gateway_url, http, reader, pid, gateway.pid)
            )
            await make_runtime_agent(http, gateway_url)
            rows.append(
                gateway_row(
                    VERSIONED_ROW, gateway_url, http, reader, pid, gateway.pid, agent=f"{RUNTIME_AGENT}@1"
                )
            )
            rows.append(
                gateway_row(
                    "ours via gateway, live channel",
                    gateway_live_url,
                    http,
                    reader,
                    live.pid,
                    gateway_live.pid,
                )
            )
            long = our_row("ours, streamed 2,000 tokens", client, stack.queue, pid, ours_queries, LONG, True)
            long_live = our_row(
                "ours, 2,000 tokens, live channel", client, live_queue, live.pid, ours_queries, LONG, True
            )
            long_live.live_url = url
            long_floors = floor_rows(plain, f"{stack.queue}-floors", floors.pid, floor_queries, LONG)
            for row in (*long_floors, long, long_live):
                row.floor = long_floors[1].label
            await asyncio.sleep(5)  # the worker loads litellm in the background after it polls
            for row in rows:
                await sequential(row, client, stack.server.pid, turns)
            if long_turns:
                for row in (*long_floors, long, long_live):
                    await sequential(row, client, stack.server.pid, long_turns)
            measured = [*rows, *([*long_floors, long, long_live] if long_turns else [])]
            report(measured, turns, long_turns, 0)
            recall_lines(rows)
            version_lines(rows)
            model_lines(measured, {SHORT: await model_stream_ms(SHORT), LONG: await model_stream_ms(LONG)})
            if count:
                for row in rows:
                    await concurrent(row, count)
                report(measured, turns, long_turns, count, sequential_table=False)
            if count and workers > 1:
                for n in range(2, workers + 1):  # one more process for each kind of worker
                    extra.append(await start_floors(stack, f"floors-{n}"))
                    extra.append(await start_product_worker(stack, stack.queue, f"worker-{n}"))
                    extra.append(await start_product_worker(stack, live_queue, f"live-worker-{n}", url))
                await asyncio.sleep(5)  # the new workers load litellm in the background
                for row in rows:
                    await concurrent(row, count)
                print(f"\nWith {workers} worker processes of each kind:", end="")
                report(measured, turns, long_turns, count, sequential_table=False)
        finally:
            if http is not None:
                await http.aclose()
            for process in (*gateways, *extra, floors, live, redis):
                if process is not None:
                    process.terminate()
                    process.wait(10)
            stack.stop()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--long-turns", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument(
        "--workers", type=int, default=1, help="then the turns at once again with this many worker processes"
    )
    arguments = parser.parse_args()
    sys.exit(
        asyncio.run(main(arguments.turns, arguments.long_turns, arguments.concurrent, arguments.workers))
    )
