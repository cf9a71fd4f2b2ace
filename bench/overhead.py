"""Orchestration overhead of a durable agent run, next to the floor, in the same process and run.

    .venv/bin/python -m bench.overhead                 # floor + ours: table, summary, targets
    .venv/bin/python -m bench.overhead --runs 5        # quicker, noisier
    .venv/bin/python -m bench.overhead --peers         # + pydantic-ai here, + OpenAI Agents SDK (2nd env)
    .venv/bin/python -m bench.overhead --profile       # + where the worker's CPU goes beyond the floor's

One `temporal server start-dev` (fresh SQLite file, free ports) is started and stopped by the
script, and, for the provider-path scenarios, one local OpenAI-compatible server
(`bench/provider_server.py`) in its own process. Every scenario's worker runs in this
process; runs are interleaved (the order rotates each round), one at a time for latency and
CPU, then N at once for throughput. Each scenario is compared with its own floor: the
scripted ones (no model call) with `floor`, the provider-path ones (one HTTP call to the
local server per model step) with `floor-provider`. See bench/README.md for what each
column means and the latest figures.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import json
import platform
import signal
import sys
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle

from bench._dev_server import BenchError
from bench._harness import (
    Bench,
    Figures,
    Prepared,
    Scenario,
    concurrent_runs,
    read_history,
    timed_run,
)
from bench._report import report
from bench.floor import PROVIDER_KEY
from bench.scenarios import DEFAULT_SCENARIOS, FLOORS, PEERS_HERE, SCENARIOS


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    """Date, cores, CPU model and load: the context any figure needs."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": model,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }


async def _prepare(bench: Bench, scenarios: list[Scenario], skipped: dict[str, str]) -> dict[str, Prepared]:
    prepared: dict[str, Prepared] = {}
    for scenario in scenarios:
        try:
            prepared[scenario.key] = await scenario.setup(bench)
        except ImportError as err:
            if scenario.key in DEFAULT_SCENARIOS:
                raise
            skipped[scenario.key] = f"not installed in this environment ({err})"
            _log(f"skipping {scenario.key}: {skipped[scenario.key]}")
    return prepared


def _order(keys: list[str], round_index: int) -> list[str]:
    shift = round_index % len(keys)
    return keys[shift:] + keys[:shift]


async def measure(
    address: str,
    scenarios: list[Scenario],
    args: argparse.Namespace,
    skipped: dict[str, str],
    provider_url: str | None = None,
) -> tuple[list[Figures], str]:
    """Run every scenario interleaved on the server at `address`; returns their figures and the profile."""
    async with contextlib.AsyncExitStack() as stack:
        bench = Bench(address, stack, provider_url)
        prepared = await _prepare(bench, scenarios, skipped)
        keys = [s.key for s in scenarios if s.key in prepared]
        floors = {s.key: s.floor for s in scenarios}
        figures = {
            s.key: Figures(s.key, prepared[s.key].label or s.label, s.iterations, s.like_for_like, s.floor)
            for s in scenarios
            if s.key in prepared
        }
        last: dict[str, WorkflowHandle[Any, Any]] = {}
        total = args.warmup + args.runs
        for index in range(total):
            done: list[str] = []
            for key in _order(keys, index):
                timed = await timed_run(prepared[key], key, address)
                last[key] = timed.handle
                if index >= args.warmup:
                    figures[key].walls.append(timed.wall)
                    figures[key].cpus.append(timed.cpu)
                    if timed.server_cpu is not None:
                        figures[key].server_cpus.append(timed.server_cpu)
                done.append(f"{key} {timed.wall * 1000:.0f} ms")
            phase = (
                f"warm-up {index + 1}/{args.warmup}"
                if index < args.warmup
                else f"run {index - args.warmup + 1}/{args.runs}"
            )
            _log(f"{phase}: {', '.join(done)}")
        for key in keys:
            await read_history(last[key], figures[key])
        await _throughput(prepared, keys, floors, figures, args)
        profiled = ""
        if args.profile:
            from bench._profile import profile

            profiled = await profile(
                prepared, [k for k in keys if k not in FLOORS], args.profile_runs, last, floors
            )
        return [figures[key] for key in keys], profiled


async def _throughput(
    prepared: dict[str, Prepared],
    keys: list[str],
    floors: dict[str, str],
    figures: dict[str, Figures],
    args: argparse.Namespace,
) -> None:
    """Concurrent batches, each scenario paired with a batch of its floor right before or after it.

    The server slows down as its database fills (runs/s drifts down over the benchmark), so a
    scenario is compared with the floor batch next to it, and the pair's order alternates
    (floor first, then the scenario first): the ratio of a round is taken within its pair.
    """
    for index in range(args.concurrent_rounds):
        done: list[str] = []
        for position, key in enumerate(k for k in _order(keys, index) if k not in FLOORS):
            floor = floors[key]
            pair = [floor, key] if (index + position) % 2 == 0 else [key, floor]
            rates: dict[str, float] = {}
            for member in pair:
                rates[member] = await concurrent_runs(prepared[member], member, args.concurrent)
                figures[member].throughputs.append(rates[member])
            figures[key].throughput_ratios.append(rates[key] / rates[floor])
            done.append(f"{key} {rates[key]:.2f} runs/s ({floor} {rates[floor]:.2f})")
        _log(f"{args.concurrent} concurrent, round {index + 1}/{args.concurrent_rounds}: {', '.join(done)}")


async def run(args: argparse.Namespace) -> int:
    """Measure, report, and write the JSON; returns the exit code."""
    main_task = asyncio.current_task()
    if main_task is not None:  # SIGTERM (e.g. `timeout`) unwinds like Ctrl-C: workers and server stop.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    wanted = list(dict.fromkeys(["floor", *args.scenarios, *(PEERS_HERE if args.peers else ())]))
    unknown = [key for key in wanted if key not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    # Each scenario's floor is measured too, floors first.
    keys = list(
        dict.fromkeys([*(f for f in FLOORS if any(SCENARIOS[k].floor == f for k in wanted)), *wanted])
    )
    scenarios = [SCENARIOS[key] for key in keys]
    skipped: dict[str, str] = {}
    second: tuple[list[Figures], dict[str, str]] = ([], {})
    info = machine()
    async with contextlib.AsyncExitStack() as stack:
        provider_url: str | None = args.provider_url
        if provider_url is None and "floor-provider" in keys:
            from bench.provider_server import launched

            provider_url = await stack.enter_async_context(launched())
            _log(f"provider server on {provider_url}")
        if provider_url is not None:
            # The local server ignores keys; no real key is ever sent to it.
            os.environ["OPENAI_API_KEY"] = PROVIDER_KEY
        if args.address:
            from bench._dev_server import wait_for_server

            await wait_for_server(args.address, timeout_s=10)
            figures, profiled = await measure(args.address, scenarios, args, skipped, provider_url)
        else:
            from bench._dev_server import dev_server
            from hosting.dev_server import temporal_binary

            address = await stack.enter_async_context(dev_server(temporal_binary()))
            _log(f"dev server on {address}")
            figures, profiled = await measure(address, scenarios, args, skipped, provider_url)
            if args.peers:
                from bench.peers.second_env import measure_in_env

                second = await asyncio.to_thread(measure_in_env, address, args, provider_url)
    info["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    if not args.no_report:
        load = f"load average {info['load_average_1m']} before / {info['load_average_1m_after']} after"
        print(
            f"\n{info['date']}, {info['nproc']} cores ({info['cpu']}), {load}; {args.warmup} warm-up + "
            f"{args.runs} runs per scenario, interleaved; {args.concurrent} concurrent x "
            f"{args.concurrent_rounds} rounds"
        )
        report(figures, skipped, "this environment")
        if args.peers:
            if second[0]:
                report(second[0], second[1], "second environment (openai >= 3), against its own floor")
            else:
                for key, reason in second[1].items():
                    print(f"\n{key}: not measured: {reason}")
        if profiled:
            print(f"\n{profiled}")
    if args.json:
        payload = {
            "machine": info,
            "figures": [dataclasses.asdict(f) for f in figures],
            "skipped": skipped,
            "second_environment": {
                "figures": [dataclasses.asdict(f) for f in second[0]],
                "skipped": second[1],
            },
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20, help="measured runs per scenario (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up runs per scenario (default 3)")
    parser.add_argument("--concurrent", type=int, default=20, help="runs started at once (default 20)")
    parser.add_argument(
        "--concurrent-rounds", type=int, default=5, help="concurrent batches per scenario (default 5)"
    )
    parser.add_argument(
        "--scenarios",
        type=lambda text: [k for k in text.split(",") if k],
        default=list(DEFAULT_SCENARIOS),
        help=f"comma-separated, the floor is always added (known: {', '.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--peers", action="store_true", help="add pydantic-ai here and the OpenAI SDK (2nd env)"
    )
    parser.add_argument("--profile", action="store_true", help="profile the worker's CPU against the floor's")
    parser.add_argument(
        "--profile-runs", type=int, default=20, help="runs per profiled scenario (default 20)"
    )
    parser.add_argument("--address", help="use this Temporal server instead of starting one")
    parser.add_argument(
        "--provider-url",
        help="use this OpenAI-compatible base URL instead of starting bench/provider_server.py",
    )
    parser.add_argument("--json", help="also write every figure to this JSON file")
    parser.add_argument("--no-report", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("runs", "concurrent", "profile_runs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("warmup", "concurrent_rounds"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    return args


def main() -> None:
    """Entry point: `python -m bench.overhead`."""
    args = parse_args()
    try:
        sys.exit(asyncio.run(run(args)))
    except BenchError as err:
        sys.exit(f"bench.overhead: {err}")
    except (KeyboardInterrupt, asyncio.CancelledError):
        sys.exit("bench.overhead: interrupted")


if __name__ == "__main__":
    main()
