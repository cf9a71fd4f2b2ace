"""A2A and MCP through the gateway versus the typed client, side by side: time to first text and answer.

    .venv/bin/python -m bench.a2a_mcp                 # 40 samples of each path, interleaved
    .venv/bin/python -m bench.a2a_mcp --samples 100

Real and on 127.0.0.1 only: a `temporal server start-dev` with a fresh SQLite file, the
product's `worker.py` as its own process, and in this process the gateway (uvicorn, its own
event loop task) and three clients, one sample of each per round so load drifts hit all alike (the
order rotates each round: a path that follows another does not always inherit its leftover work):

- typed: `SessionHandle.ask` on a new session, then the run's events (`RunHandle.events`) and its
  result: what a Python service does without the gateway;
- A2A: the official `a2a-sdk` client, `message/stream` to `/a2a/default`: the first `working` status
  update carrying text, then the final `completed` status (after the answer artifact);
- MCP: the official `mcp` client over streamable HTTP, tool `ask` with a progress token: the first
  progress notification, then the tool's result.

Each is timed from the client's call. The model is the scripted one, streaming 4 characters every
5 ms (no provider): what is measured is the product, the gateway and the protocols. The target is
the gateway paths' p50 at most 20 ms over the typed client's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import httpx2
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import AgentCard, Message, Part, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import MessageToDict, ParseDict
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client

from bench._process_stack import Stack, machine
from clients.sessions import Sessions
from contracts import AgentConfig, ScriptTurn
from contracts.stream import DeltaEvent
from gateway.app import build_app
from gateway.context import build_context
from gateway.settings import GatewaySettings

ANSWER = "word " * 80
TARGET_MS = 20.0
Sample = tuple[float, float]  # (first text, answer), seconds


def agent() -> AgentConfig:
    """A streamed scripted answer: 400 characters, 4 every 5 ms."""
    turn = ScriptTurn(content=ANSWER, chunk_chars=4, chunk_delay_s=0.005)
    return AgentConfig(model="scripted", script=[turn], stream=True, stream_interval_s=0.02)


async def typed_sample(sessions: Sessions, config: AgentConfig) -> Sample:
    start = time.perf_counter()
    session = sessions.get(f"bench-typed-{uuid.uuid4().hex[:10]}")
    accepted = await session.ask("Go", config=config)
    run = await session.run(accepted.request_id)
    first = 0.0
    async for event in run.events():
        if not first and isinstance(event, DeltaEvent) and event.text:
            first = time.perf_counter() - start
    await run.result()
    return first, time.perf_counter() - start


async def a2a_sample(http: httpx.AsyncClient, card: AgentCard) -> Sample:
    client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="Go")])
    start = time.perf_counter()
    first = 0.0
    async for event in client.send_message(SendMessageRequest(message=message)):
        update = event.status_update
        if not first and event.HasField("status_update") and MessageToDict(update.metadata).get("delta"):
            first = time.perf_counter() - start
        if update.status.state == TaskState.TASK_STATE_COMPLETED:
            break
    return first, time.perf_counter() - start


async def mcp_sample(mcp: McpClient) -> Sample:
    start = time.perf_counter()
    first = 0.0

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        nonlocal first
        first = first or time.perf_counter() - start

    result = await mcp.call_tool("ask", {"query": "Go"}, progress_callback=progress)
    assert result.structured_content and result.structured_content["status"] == "completed", result
    return first, time.perf_counter() - start


def spread(values: list[float]) -> str:
    ordered = sorted(v * 1e3 for v in values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):7.1f}  p99 {p99:7.1f}"


def free_port() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


async def measure(client: Client, queue: str, samples: int) -> dict[str, list[Sample]]:
    """Interleaved samples of the three paths (after one warm-up round)."""
    config = agent()
    settings = GatewaySettings(agents={"default": config}, task_queue=queue)
    ctx = build_context(settings, client)
    sock = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(ctx), log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    found: dict[str, list[Sample]] = {"typed": [], "a2a": [], "mcp": []}
    try:
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
            await asyncio.sleep(0.01)
        async with (
            httpx.AsyncClient(timeout=60) as http,
            httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0)) as http2,
            McpClient(streamable_http_client(f"{url}/mcp", http_client=http2)) as mcp,
        ):
            card_json = (await http.get(f"{url}/a2a/default/.well-known/agent-card.json")).json()
            card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
            paths: dict[str, Callable[[], Awaitable[Sample]]] = {
                "typed": lambda: typed_sample(ctx.sessions, config),
                "a2a": lambda: a2a_sample(http, card),
                "mcp": lambda: mcp_sample(mcp),
            }
            names = list(paths)
            for round_ in range(samples + 1):
                shift = round_ % len(names)  # each path goes first, second and last equally often
                for name in names[shift:] + names[:shift]:
                    value = await paths[name]()
                    if round_:  # the first round warms every path up
                        found[name].append(value)
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, 10)
        sock.close()
    return found


def report(found: dict[str, list[Sample]]) -> bool:
    typed_first = statistics.median(s[0] for s in found["typed"])
    typed_answer = statistics.median(s[1] for s in found["typed"])
    met = True
    print(f"\n{'path':6} {'first text (ms)':>30} {'answer (ms)':>30} {'p50 over typed (ms)':>24}")
    for name, values in found.items():
        firsts, answers = [s[0] for s in values], [s[1] for s in values]
        over_first = (statistics.median(firsts) - typed_first) * 1e3
        over_answer = (statistics.median(answers) - typed_answer) * 1e3
        if name != "typed":
            met = met and over_first <= TARGET_MS and over_answer <= TARGET_MS
        print(
            f"{name:6} {spread(firsts):>30} {spread(answers):>30} {over_first:+10.1f} / {over_answer:+8.1f}"
        )
    verdict = "met" if met else "NOT met"
    print(f"\ntarget: the gateway paths' p50 at most +{TARGET_MS:.0f} ms over the typed client's: {verdict}")
    return met


async def main(samples: int) -> int:
    """Start the stack, measure, print."""
    from hosting.connection import connect

    print(f"# bench.a2a_mcp: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-a2a-mcp-") as work:
        stack = Stack(Path(work))
        try:
            await stack.start_server()
            await stack.start_worker()
            client = await connect(stack.address)
            found = await measure(client, stack.queue, samples)
        finally:
            stack.stop()
    print(f"{samples} samples of each path, interleaved")
    report(found)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=40)
    sys.exit(asyncio.run(main(parser.parse_args().samples)))
