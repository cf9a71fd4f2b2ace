"""Benchmark of worker start-up: seconds from process start to the "worker polling" log line.

Run: `.venv/bin/python -m bench.startup` (options: `--runs 5`, `--address host:port`).

Without `--address` it starts its own `temporal server start-dev` on free ports (so it
measures nothing else's load and disturbs no other worker) and stops it afterwards. Each
run spawns `worker.py` on a fresh task queue, reads its log until the "worker polling"
line (the worker logs it once `Worker` has started polling), then stops it with SIGTERM.
The figure includes the interpreter's own start-up, as a user would see it; the CPU
seconds the worker used by then (from `/proc`) are printed too, as they depend less on
what else the machine is doing. `--compare DIR` also times `DIR/worker.py` (another
checkout, e.g. `git archive HEAD | tar -x -C DIR`), interleaved with ours.

It also reports, each in fresh interpreters (median of `--runs`), what litellm costs
apart: importing it, its first call (loading it as the LLM activity does, then one
`litellm.acompletion` to the `scripted/scripted` custom provider), and the CPU time of one
warm `litellm.acompletion` to that provider: litellm's whole call pipeline around a
provider that answers at once. The LLM activity's scripted model does not take that path
(it answers without litellm), nor does an `openai/` model (litellm's OpenAI provider called
directly, `activities.llm._provider`); other providers do.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from hosting.dev_server import answers, temporal_binary

ROOT = Path(__file__).resolve().parent.parent
READY_LINE = "worker polling"
READY_TIMEOUT_S = 120.0

# Each runs in a fresh interpreter and prints one number.
IMPORT_PROBE = """
import time
import activities, contracts, conversation, payloads.redaction  # a worker has these already
started = time.perf_counter()
from activities.llm import _litellm
print(time.perf_counter() - started)
"""

FIRST_CALL_PROBE = """
import asyncio, time
started = time.perf_counter()
from activities.llm.litellm_loading import load_litellm_now
load_litellm_now()  # import and configure litellm, register the scripted provider
from activities.llm import _litellm
from bench.startup import scripted_kwargs
asyncio.run(_litellm.acompletion(scripted_kwargs()))
print(time.perf_counter() - started)
"""

CALL_CPU_PROBE = """
import asyncio, time
from activities.llm.litellm_loading import load_litellm_now
load_litellm_now()
from activities.llm import _litellm
from bench.startup import scripted_kwargs

async def main(calls: int) -> float:
    kwargs = scripted_kwargs()
    for _ in range(50):
        await _litellm.acompletion(dict(kwargs))
    started = time.process_time()
    for _ in range(calls):
        await _litellm.acompletion(dict(kwargs))
    return (time.process_time() - started) / calls

print(asyncio.run(main(1000)))
"""


def scripted_request() -> object:
    """A one-message `LLMRequest` to the scripted model, answered with a short text."""
    from contracts.agent import ScriptTurn
    from contracts.llm import LLMRequest, ScriptedCall
    from conversation import Message

    turn = ScriptTurn(content="42")
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        iteration=0,
        scripted=ScriptedCall(index=0, length=1, turn=turn),
    )


def scripted_kwargs() -> dict[str, object]:
    """`litellm.acompletion` keyword arguments for `scripted_request`: model `scripted/scripted`."""
    from activities.llm import _litellm
    from contracts.llm import LLMRequest

    request = scripted_request()
    assert isinstance(request, LLMRequest)
    return _litellm.completion_kwargs(request, attempt=1)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_dev_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A dev server of our own on free ports (SQLite in `workdir`), once it answers."""
    port, ui_port = free_port(), free_port()
    address = f"127.0.0.1:{port}"
    command = [
        temporal_binary(),
        *("server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)),
        *("--ui-port", str(ui_port), "--db-filename", str(workdir / "bench.db"), "--log-level", "error"),
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if asyncio.run(answers(address)):
            return server, address
        time.sleep(0.3)
    server.terminate()
    raise SystemExit(f"bench.startup: the dev server did not answer on {address}")


@dataclass(frozen=True)
class Start:
    """One worker start: wall seconds to the polling line, and the CPU seconds it used by then."""

    wall_s: float
    cpu_s: float | None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (Linux `/proc`; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_worker_start(address: str, root: Path = ROOT) -> Start:
    """Spawn `root`'s `worker.py` and time it to its "worker polling" log line."""
    queue = f"bench-startup-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, str(root / "worker.py"), "--address", address, "--task-queue", queue]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    worker = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert worker.stdout is not None
    lines: list[str] = []
    try:
        for line in worker.stdout:
            lines.append(line)
            if READY_LINE in line:
                return Start(time.perf_counter() - started, cpu_seconds(worker.pid))
            if time.perf_counter() - started > READY_TIMEOUT_S:
                break
        raise SystemExit("bench.startup: the worker never logged its polling line:\n" + "".join(lines))
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def probe(source: str, runs: int) -> float:
    """The median of the number `source` prints, each run in a fresh interpreter."""
    values: list[float] = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", source], cwd=ROOT, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"bench.startup: probe failed:\n{done.stderr}")
        values.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(values)


def describe(label: str, starts: list[Start]) -> str:
    """One line: the median wall time, its range and every run, and the median CPU time."""
    seconds = [s.wall_s for s in starts]
    runs = ", ".join(f"{s:.2f}" for s in seconds)
    cpu = [s.cpu_s for s in starts if s.cpu_s is not None]
    cpu_text = f"; CPU median {statistics.median(cpu):.2f} s" if cpu else ""
    spread = f"min {min(seconds):.2f}, max {max(seconds):.2f}: {runs}"
    return f"{label:<26}median {statistics.median(seconds):.2f} s ({spread}){cpu_text}"


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=5, help="worker starts (and probe runs) to take the median of"
    )
    parser.add_argument("--address", help="a running Temporal server (default: start a private dev server)")
    parser.add_argument(
        "--compare",
        type=Path,
        help="another checkout (e.g. from `git archive`): its worker.py is timed too, interleaved with ours",
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as workdir:
        server, address = (None, args.address) if args.address else start_dev_server(Path(workdir))
        starts: list[Start] = []
        others: list[Start] = []
        try:
            for _ in range(args.runs):
                if args.compare is not None:
                    others.append(time_worker_start(address, args.compare.resolve()))
                starts.append(time_worker_start(address))
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=15)
    print(describe("worker start to polling:", starts))
    if args.compare is not None:
        print(describe(f"  {args.compare}:", others))
    print(f"litellm import:           median {probe(IMPORT_PROBE, args.runs):.2f} s (fresh interpreter)")
    print(
        f"litellm first call:       median {probe(FIRST_CALL_PROBE, args.runs):.2f} s "
        "(import + first litellm.acompletion, scripted/scripted custom provider)"
    )
    print(
        f"litellm.acompletion CPU:  median {probe(CALL_CPU_PROBE, args.runs) * 1000:.2f} ms per call "
        "(warm, scripted/scripted custom provider: litellm's call pipeline)"
    )


if __name__ == "__main__":
    main()
