"""The gateway, measured side by side in one run: time to first token, fan-out, many conversations.

    .venv/bin/python -m bench.gateway                   # 20 TTFT samples, 1/10/50 viewers, 100 conversations
    .venv/bin/python -m bench.gateway --samples 50 --conversations 100
    .venv/bin/python -m bench.gateway --live --conversations 100,200   # on a live channel (Redis)

Real and on 127.0.0.1 only: a `temporal server start-dev` (SQLite), the product's `worker.py` and
`gateway.py` each as its own process (the gateway's CPU time and RSS are read from /proc), and the
clients here. The model is the scripted one, streaming 400 characters 4 every 5 ms
(bench/gateway_agents.py). Three tables:

1. Time to first token, interleaved per round (which goes first alternates): the typed Python
   client (`SessionHandle.ask`, then `RunHandle.events()`) versus an AG-UI client through the
   gateway (`POST /agui/default`, the first TEXT_MESSAGE_CONTENT), p50/p99; target: the
   gateway's p50 at most +20 ms.
2. One run watched by 1, 10 and 50 SSE clients (the POST and GETs re-attaching): the run's history
   events and the gateway's CPU seconds for it (one subscription per run, however many viewers).
3. 100 concurrent AG-UI conversations (one run each; `--conversations 100,200`: 100, then 200):
   completed, lost events (an answer that is not exactly the scripted one, or a stream that ended
   without RUN_FINISHED), p99 latency to RUN_FINISHED, and the gateway's RSS after them.

With `--live`, a `redis-server` the benchmark starts is the live channel of the worker, the gateway
and the typed client here (`REACT_LIVE_URL`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench._dev_server import die_with_parent, free_ports
from bench._process_stack import REPO, Stack, machine
from bench.gateway_agents import ANSWER, streamed_agent
from clients.sessions import Sessions
from contracts.stream import DeltaEvent
from hosting.connection import connect
from live.channel import LIVE_URL_ENV
from live.dev_redis import free_port, start_redis

TARGET_MS = 20.0
TICKS = os.sysconf("SC_CLK_TCK")


def ms(values: list[float]) -> str:
    ordered = sorted(v * 1e3 for v in values)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return f"p50 {statistics.median(ordered):7.1f}  p99 {p99:7.1f}"


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid`, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def start_gateway(stack: Stack) -> tuple[subprocess.Popen[bytes], str]:
    """`gateway.py` on a free loopback port, on the stack's server and queue."""
    [port] = free_ports(1)
    command = [sys.executable, "gateway.py", "--port", str(port), "--address", stack.address]
    command += ["--task-queue", stack.queue, "--agents", "bench.gateway_agents", "--log-level", "warning"]
    log = (stack.work / "gateway.log").open("wb")
    process = subprocess.Popen(  # noqa: ASYNC220 (returns at once)
        die_with_parent(command), cwd=REPO, env=stack.env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient() as http:
        for _ in range(300):
            try:
                if (await http.get(f"{url}/readyz")).status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the gateway did not get ready; see {stack.work / 'gateway.log'}")


async def agui(
    http: httpx.AsyncClient, url: str, thread: str, *, get: bool = False
) -> tuple[float, str, bool]:
    """One AG-UI stream: (seconds to first text, the text, whether it ended with RUN_FINISHED)."""
    start, first, text, finished = time.perf_counter(), 0.0, "", False
    if get:
        request = http.build_request("GET", f"{url}/agui/default/threads/{thread}/events")
    else:
        body = {
            "threadId": thread,
            "runId": uuid.uuid4().hex,
            "messages": [{"id": "u", "role": "user", "content": "Go"}],
        }
        request = http.build_request("POST", f"{url}/agui/default", json=body)
    response = await http.send(request, stream=True)
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            first = first or time.perf_counter() - start
            text += event["delta"]
        finished = finished or event["type"] == "RUN_FINISHED"
    await response.aclose()
    return first, text, finished


async def typed_first(sessions: Sessions) -> float:
    start = time.perf_counter()
    session = sessions.get(f"bench-typed-{uuid.uuid4().hex[:10]}")
    accepted = await session.ask("Go", config=streamed_agent())
    run = await session.run(accepted.request_id)
    first = 0.0
    async for event in run.events():
        if not first and isinstance(event, DeltaEvent) and event.text:
            first = time.perf_counter() - start
    return first


async def ttft(http: httpx.AsyncClient, url: str, sessions: Sessions, samples: int) -> bool:
    typed: list[float] = []
    gateway: list[float] = []
    for round_ in range(samples + 1):
        if round_ % 2:  # each path goes first equally often (the one after inherits leftover work)
            t = await typed_first(sessions)
            g = (await agui(http, url, f"ttft-{uuid.uuid4().hex[:10]}"))[0]
        else:
            g = (await agui(http, url, f"ttft-{uuid.uuid4().hex[:10]}"))[0]
            t = await typed_first(sessions)
        if round_:  # the first round warms both paths up
            typed.append(t)
            gateway.append(g)
    over = (statistics.median(gateway) - statistics.median(typed)) * 1e3
    print(f"\n1. time to first token ({samples} samples each, interleaved)")
    print(f"   typed client     {ms(typed)}")
    print(f"   AG-UI (gateway)  {ms(gateway)}   p50 {over:+.1f} ms")
    met = over <= TARGET_MS
    print(f"   target: the gateway's p50 at most +{TARGET_MS:.0f} ms: {'met' if met else 'NOT met'}")
    return met


async def fan_out(http: httpx.AsyncClient, url: str, client_pid: int, sessions: Sessions) -> None:
    print("\n2. one run, N SSE viewers (the POST and N-1 GETs re-attaching)")
    print(f"   {'viewers':>8} {'history events':>15} {'gateway CPU (s)':>16} {'all complete':>13}")
    for viewers in (1, 10, 50):
        thread = f"fan-{uuid.uuid4().hex[:10]}"
        before = cpu_s(client_pid)
        post = asyncio.create_task(agui(http, url, thread))
        session = sessions.get(f"gw/local/default/{thread}")
        while True:
            try:
                if (await session.status()).active_request_id:
                    break
            except Exception:
                pass
            await asyncio.sleep(0.01)
        results = await asyncio.gather(post, *(agui(http, url, thread, get=True) for _ in range(viewers - 1)))
        used = cpu_s(client_pid) - before
        record = (await session.requests())[-1]
        history = await session._client.get_workflow_handle(record.run_workflow_id).fetch_history()  # pyright: ignore[reportPrivateUsage]
        complete = all(text == ANSWER and done for _, text, done in results)
        print(f"   {viewers:>8} {len(history.events):>15} {used:>16.2f} {complete!s:>13}")


async def conversations(http: httpx.AsyncClient, url: str, pid: int, count: int) -> None:
    async def one() -> tuple[float, bool]:
        start = time.perf_counter()
        _, text, finished = await agui(http, url, f"many-{uuid.uuid4().hex[:10]}")
        return time.perf_counter() - start, text == ANSWER and finished

    results = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    done = [r for r in results if isinstance(r, tuple)]
    complete = [seconds for seconds, ok in done if ok]
    lost = len(done) - len(complete)
    failed = len(results) - len(done)
    print(f"\n3. {count} concurrent AG-UI conversations")
    print(f"   completed {len(complete)}/{count}   lost events in {lost}   errors {failed}")
    if complete:
        print(f"   latency to RUN_FINISHED  {ms(complete)}")
    print(f"   gateway RSS after them   {rss_mb(pid):.0f} MiB")


async def main(samples: int, counts: list[int], live: bool) -> int:
    print(f"# bench.gateway: {machine()}{', live channel (Redis)' if live else ''}")
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as work:
        stack = Stack(Path(work))
        gateway: subprocess.Popen[bytes] | None = None
        redis: subprocess.Popen[bytes] | None = None
        try:
            if live:
                port = free_port()
                redis = start_redis(port)
                stack.env[LIVE_URL_ENV] = os.environ[LIVE_URL_ENV] = f"redis://127.0.0.1:{port}/0"
            await stack.start_server()
            await stack.start_worker()
            gateway, url = await start_gateway(stack)
            client = await connect(stack.address)
            sessions = Sessions(client, task_queue=stack.queue)
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=200)
            async with httpx.AsyncClient(timeout=300, limits=limits) as http:
                met = await ttft(http, url, sessions, samples)
                await fan_out(http, url, gateway.pid, sessions)
                for count in counts:
                    await conversations(http, url, gateway.pid, count)
        finally:
            if gateway is not None:
                gateway.terminate()
                gateway.wait(10)
            stack.stop()
            if redis is not None:
                redis.terminate()
                redis.wait(10)
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--conversations", default="100", help="how many at once; several: 100,200")
    parser.add_argument("--live", action="store_true", help="a live channel (a redis-server) for all")
    arguments = parser.parse_args()
    counts = [int(n) for n in arguments.conversations.split(",")]
    sys.exit(asyncio.run(main(arguments.samples, counts, arguments.live)))
