"""`python gateway.py` under a flood of idle and slowly sent connections: health answers, they are closed.

The gateway is the real process, started with a low open-file limit (soft 256, hard 512) as a small
host gives it; the flood is 400 idle sockets (more than the files the soft limit allows) and 60
sockets sending their headers a byte at a time, all on loopback. While they are open `/healthz`
answers at once, each one is closed within the header timeout, and the log stays small. A request
body sent too slowly gets 408, a kept-alive connection idle after its response is closed, and 50
junk requests leave one "Invalid HTTP request" line in the log.
In process, on a limit of 3: a newcomer closes the oldest idle connection, and is refused with 503
when every connection is busy with a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gateway.server.connections import ConnectionLimits, guarded_h11
from gateway.server.log_rate import RepeatedLines
from testing import AgentTestEnvironment
from tests.helpers import ROOT
from tests.s3_server import free_port

HEADER_TIMEOUT_S = 2.0
KEEPALIVE_S = 1
BODY_TIMEOUT_S = 2.0
SOFT_FILES, HARD_FILES = 256, 512
IDLE_SOCKETS = 400
SLOW_SOCKETS = 60
CLOSE_WAIT_S = HEADER_TIMEOUT_S + 8.0
"""How long a test waits for the gateway to close a connection it must close after `HEADER_TIMEOUT_S`."""
HEALTH_WAIT_S = 3.0
READY_WAIT_S = 60.0
MAX_LOG_BYTES = 64 * 1024
REPEATED_JUNK = 50


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT_FILES, HARD_FILES))


@pytest.fixture(autouse=True)
def room_for_the_flood() -> Iterator[None]:
    """This process opens a few hundred sockets: its own soft limit must allow them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 4096) if hard != resource.RLIM_INFINITY else 4096
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    yield


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_low_file_limit
        )


@asynccontextmanager
async def gateway_process(address: str, port: int, log: Path) -> AsyncIterator[subprocess.Popen[bytes]]:
    """`python gateway.py` (no tokens, loopback) with short timeouts and a low file limit, once ready."""
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "REACT_GATEWAY_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "REACT_GATEWAY_KEEPALIVE_S": str(KEEPALIVE_S),
        "REACT_GATEWAY_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
    }
    env.pop("REACT_GATEWAY_TOKENS", None)
    process = _spawn([sys.executable, "gateway.py", "--address", address, "--port", str(port)], env, log)
    try:
        async with httpx.AsyncClient(timeout=2) as http, asyncio.timeout(READY_WAIT_S):
            while True:
                assert process.poll() is None, log.read_text()
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=20)


async def _closed_by_peer(reader: asyncio.StreamReader) -> float:
    """Seconds until the gateway closes the connection (its data, if any, is read and dropped)."""
    started = time.monotonic()
    with contextlib.suppress(ConnectionError):
        while await reader.read(4096):
            pass
    return time.monotonic() - started


async def _trickle_headers(writer: asyncio.StreamWriter, stop: asyncio.Event) -> None:
    """A slowloris: a request line, then a header byte every 0.3 s, never the blank line."""
    with contextlib.suppress(ConnectionError):
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
        while not stop.is_set() and not writer.is_closing():
            await asyncio.sleep(0.3)
            writer.write(b"a")
            await writer.drain()


async def _health_s(http: httpx.AsyncClient) -> float:
    started = time.monotonic()
    response = await http.get("/healthz")
    assert response.json() == {"status": "ok"}
    return time.monotonic() - started


async def test_a_flood_of_idle_and_slow_connections_leaves_health_answering(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    address = agents.client.service_client.config.target_host
    port = free_port()
    log = tmp_path / "gateway.log"
    async with gateway_process(address, port, log):
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(IDLE_SOCKETS)]
        slow = [await asyncio.open_connection("127.0.0.1", port) for _ in range(SLOW_SOCKETS)]
        stop = asyncio.Event()
        tricklers = [asyncio.create_task(_trickle_headers(w, stop)) for _, w in slow]
        closers = [asyncio.create_task(_closed_by_peer(r)) for r, _ in (*idle, *slow)]
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=HEALTH_WAIT_S) as http:
                health = [await _health_s(http) for _ in range(5)]
                async with asyncio.timeout(CLOSE_WAIT_S):
                    closed_after = await asyncio.gather(*closers)
                health.append(await _health_s(http))
        finally:
            stop.set()
            for task in (*tricklers, *closers):
                task.cancel()
            for _, writer in (*idle, *slow):
                writer.close()
    assert max(health) < HEALTH_WAIT_S, health
    assert max(closed_after) <= HEADER_TIMEOUT_S + 3.0, max(closed_after)
    text = log.read_text()
    assert log.stat().st_size < MAX_LOG_BYTES, text[-2000:]
    assert "Too many open files" not in text
    assert "at most 384 connections; 512 open files" in text  # the soft limit raised, the budget under it


async def test_slow_bodies_get_408_idle_kept_alive_connections_are_closed_and_repeats_logged_once(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    address = agents.client.service_client.config.target_host
    port = free_port()
    log = tmp_path / "gateway.log"
    async with gateway_process(address, port, log):
        for _ in range(REPEATED_JUNK):  # uvicorn logs each: "Invalid HTTP request received."
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            assert (await asyncio.wait_for(reader.read(), CLOSE_WAIT_S)).startswith(b"HTTP/1.1 400 ")
            writer.close()

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /agui/default HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b'content-length: 100\r\n\r\n{"threadId": '
        )
        await writer.drain()
        started = time.monotonic()
        answer = await asyncio.wait_for(reader.readuntil(b"}}"), CLOSE_WAIT_S)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b'"invalid_input"' in answer and b"did not arrive within 2 s" in answer
        assert time.monotonic() - started < BODY_TIMEOUT_S + 3.0
        writer.close()

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        assert (await reader.readuntil(b'{"status":"ok"}')).startswith(b"HTTP/1.1 200 ")
        assert await asyncio.wait_for(_closed_by_peer(reader), CLOSE_WAIT_S) <= KEEPALIVE_S + 3.0
        writer.close()
    assert log.read_text().count("Invalid HTTP request received.") == 1  # then dropped for 10 s


@asynccontextmanager
async def _guarded_server(app: Starlette, limits: ConnectionLimits) -> AsyncIterator[uvicorn.Server]:
    """`app` on uvicorn with `guarded_h11(limits)` on a free loopback port (`_port(server)`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", http=guarded_h11(limits))
    server = uvicorn.Server(config)
    server.config.port = sock.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await _until(lambda: server.started)
        yield server
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        sock.close()


async def _until(condition: Callable[[], bool]) -> None:
    """Wait until `condition()` (the server's state is polled: it has no event to wait on)."""
    async with asyncio.timeout(10):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)


async def _open_connections(server: uvicorn.Server, count: int) -> None:
    """Wait until the server holds `count` connections."""
    await _until(lambda: len(server.server_state.connections) == count)


async def test_at_the_limit_idle_connections_make_room_and_busy_ones_refuse_newcomers() -> None:
    release = asyncio.Event()

    async def slow(request: Request) -> Response:
        await release.wait()
        return PlainTextResponse("done")

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/slow", slow), Route("/healthz", health)])
    async with _guarded_server(app, ConnectionLimits(header_timeout_s=30, max_connections=3)) as server:
        port = server.config.port
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await _open_connections(server, 3)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            assert (await http.get("/healthz")).text == "ok"  # room made: the oldest idle one closed
        assert await asyncio.wait_for(idle[0][0].read(), 5) == b""
        for _, writer in idle:
            writer.close()
        await _open_connections(server, 0)

        busy = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for _, writer in busy:
            writer.write(b"GET /slow HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        await _until(lambda: len(server.server_state.tasks) == 3)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        refused = await asyncio.wait_for(reader.read(), 5)
        assert refused.startswith(b"HTTP/1.1 503 ") and b'"unavailable"' in refused, refused
        writer.close()
        release.set()
        for reader, writer in busy:
            assert (await asyncio.wait_for(reader.readuntil(b"done"), 5)).startswith(b"HTTP/1.1 200 ")
            writer.close()


def test_repeated_log_lines_pass_once_a_window_with_a_count() -> None:
    now = [0.0]
    lines = RepeatedLines(window_s=10.0, clock=lambda: now[0])

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    passed = [lines.filter(record("accept failed: Too many open files")) for _ in range(10_000)]
    assert passed.count(True) == 1
    assert lines.filter(record("another line"))  # other lines are not held back
    now[0] = 11.0
    later = record("accept failed: Too many open files")
    assert lines.filter(later)
    assert later.getMessage().endswith("[9999 more like this in the last 11 s]")
    assert lines.filter(later)  # the same record at a second handler: the same answer
    for port in range(100):  # lines that differ are all written (each request's access line)
        assert lines.filter(logging.LogRecord("uvicorn.access", logging.INFO, "", 1, "%s GET", (port,), None))
