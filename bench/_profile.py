"""`--profile`: where this process's CPU goes in our runs beyond the floor's.

py-spy attaches to this very process (all threads: the event loop with the activities and
the client, and the workflow threads where workflow code runs) and samples only the thread
holding the GIL, so samples approximate Python CPU time. Each scenario is recorded over its
own sequential runs; figures are ms per run. Native threads that run without the GIL (the
Temporal core SDK, in Rust) are not sampled: the gap between measured process CPU and sampled
CPU is theirs. Without py-spy it falls back to pyinstrument, which sees the main thread only.
Raw stacks (flamegraph "collapsed" format) and the report are saved under `.bench/`.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHandle

from bench._anatomy import anatomy_table
from bench._harness import Prepared, timed_run

RATE = 250
OUT_ROOT = Path(__file__).resolve().parents[1] / ".bench"
_LINE = re.compile(r":\d+\)$")


def _frame(text: str) -> str:
    """`func (file.py:12)` -> `func (file.py)`: one key per function, not per line."""
    return _LINE.sub(")", text)


CANDIDATES: list[tuple[str, tuple[str, ...]]] = [
    # (what, frame patterns): "def NAME" matches a function by its short name ("def NAME in PATH" also
    # by its file); any other pattern matches a frame whose text contains it (a file or a folder).
    ("workflow activations, all (workflow threads, incl. sandbox)", ("def activate in _workflow.py",)),
    ("workflow instance creation (sandbox re-imports modules per run)", ("def _create_workflow_instance",)),
    ("workflow sandbox, all (creation + activations)", ("workflow_sandbox/",)),
    ("sandbox importer and restriction proxies", ("workflow_sandbox/_importer.py", "_restrictions.py")),
    ("completing activations (bridge to core, protobuf)", ("def complete_workflow_activation",)),
    ("serialization context through the sandbox (per payload)", ("def get_serialization_context",)),
    ("payload conversion, all (temporalio/converter/)", ("temporalio/converter/",)),
    ("pydantic data converter (temporalio/contrib/pydantic.py)", ("temporalio/contrib/pydantic.py",)),
    ("pydantic BaseModel methods (validate, dump, copy)", ("pydantic/main.py",)),
    ("copy.deepcopy, anywhere", ("def deepcopy in copy.py",)),
    (
        "thread append (conversation/thread.py, append_message)",
        ("conversation/thread.py", "def append_message"),
    ),
    ("projection.message_of", ("def message_of",)),
    ("project_for_model (conversation/budget.py)", ("def project_for_model",)),
    (
        "trace events (workflows/run/trace_log.py, _event)",
        ("workflows/run/trace_log.py", "def _event in workflows/"),
    ),
    ("activity summaries", ("def activity_summary",)),
    ("LLM activity, all (llm_call)", ("def llm_call",)),
    ("litellm", ("litellm/",)),
    ("the direct OpenAI route (activities/llm/_provider.py)", ("activities/llm/_provider.py",)),
    ("OpenAI SDK (openai/)", ("(openai/",)),
    ("tool activity, all (run_tool)", ("def run_tool",)),
    ("activity worker, all (temporalio/worker/_activity.py)", ("temporalio/worker/_activity.py",)),
    ("client (temporalio/client.py)", ("temporalio/client.py",)),
    ("json (stdlib)", ("(json/",)),
]


def _matches(frame: str, patterns: tuple[str, ...]) -> bool:
    function, _, where = frame.partition(" (")
    short = function.rsplit(".", 1)[-1]
    for pattern in patterns:
        if pattern.startswith("def "):
            name, _, path = pattern.removeprefix("def ").partition(" in ")
            if short == name and path in where:
                return True
        elif pattern in frame:
            return True
    return False


@dataclass
class Samples:
    """Parsed py-spy raw output."""

    total: int = 0
    own: Counter[str] = field(default_factory=Counter[str])
    categories: Counter[str] = field(default_factory=Counter[str])
    threads: Counter[str] = field(default_factory=Counter[str])
    modules: Counter[str] = field(default_factory=Counter[str])

    @classmethod
    def parse(cls, path: Path) -> Samples:
        """Read a `py-spy record --format raw --threads` file."""
        samples = cls()
        for line in path.read_text().splitlines():
            stack_text, _, count_text = line.rpartition(" ")
            if not stack_text or not count_text.isdigit():
                continue
            count = int(count_text)
            thread, *frames = stack_text.split(";")
            frames = [_frame(f) for f in frames]
            samples.total += count
            samples.threads[re.sub(r"[-_ ]?\d+$", "", thread.split(": ", 1)[-1])] += count
            if frames:
                samples.own[frames[-1]] += count
            for name, patterns in CANDIDATES:
                if any(_matches(f, patterns) for f in frames):
                    samples.categories[name] += count
            # Module bodies run while sampled: in steady state, the sandbox importing a workflow's modules.
            for module in {f for f in frames if f.startswith("<module> (") and "bench/overhead.py" not in f}:
                samples.modules[module.removeprefix("<module> ")] += count
        return samples


def _ms(samples: int, runs: int) -> float:
    return samples * 1000 / RATE / runs


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _start_py_spy(binary: str, out: Path) -> subprocess.Popen[str]:
    command = [
        binary, "record", "--pid", str(os.getpid()), "--rate", str(RATE), "--format", "raw",
        "--threads", "--gil", "--nonblocking", "--output", str(out),
    ]  # fmt: skip
    spy = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert spy.stdout is not None
    first = spy.stdout.readline()
    if "Sampling" not in first:
        spy.kill()
        rest = spy.communicate(timeout=10)[0]
        raise RuntimeError(f"py-spy did not attach: {(first + rest).strip()[-300:]}")
    return spy


async def _record(prepared: Prepared, key: str, runs: int, binary: str, out: Path) -> float:
    """Sample `runs` sequential runs of `key` into `out`; returns the process CPU seconds they took."""
    spy = await asyncio.to_thread(_start_py_spy, binary, out)
    try:
        start = time.process_time()
        for _ in range(runs):
            await timed_run(prepared, key)
        return time.process_time() - start
    finally:
        spy.send_signal(signal.SIGINT)
        await asyncio.to_thread(spy.communicate, None, 60)


def _report(
    results: dict[str, tuple[Samples, float]], key: str, runs: int, floor_key: str = "floor", top: int = 25
) -> str:
    floor, floor_cpu = results[floor_key]
    ours, ours_cpu = results[key]
    lines = [
        f"#### {key} vs {floor_key}: ms of CPU per run ({runs} runs each, py-spy {RATE} Hz, GIL holder only)",
        "",
        f"process CPU per run: {key} {ours_cpu * 1000 / runs:.1f} ms, "
        f"{floor_key} {floor_cpu * 1000 / runs:.1f} ms; "
        f"sampled Python: {key} {_ms(ours.total, runs):.1f} ms, {floor_key} {_ms(floor.total, runs):.1f} ms "
        "(the rest is native threads, e.g. the core SDK; on a busy machine a GIL holder that is not "
        "scheduled is still sampled, so sampled time can exceed process CPU: read the shares, not the sum)",
        "",
        f"| where (inclusive) | {key} | {floor_key} | extra |",
        "|---|---:|---:|---:|",
    ]
    for name, _ in CANDIDATES:
        mine, base = _ms(ours.categories[name], runs), _ms(floor.categories[name], runs)
        lines.append(f"| {name} | {mine:.1f} | {base:.1f} | {mine - base:+.1f} |")
    lines += [
        "",
        f"| function (own time, top {top} by extra) | {key} | {floor_key} | extra |",
        "|---|---:|---:|---:|",
    ]
    extra = {f: _ms(ours.own[f], runs) - _ms(floor.own[f], runs) for f in set(ours.own) | set(floor.own)}
    for function in sorted(extra, key=lambda f: -extra[f])[:top]:
        mine, base = _ms(ours.own[function], runs), _ms(floor.own[function], runs)
        lines.append(f"| `{function}` | {mine:.2f} | {base:.2f} | {extra[function]:+.2f} |")
    lines += ["", "| module body executed (inclusive) | " + f"{key} | {floor_key} |", "|---|---:|---:|"]
    for module, count in ours.modules.most_common(8):
        lines.append(f"| `{module}` | {_ms(count, runs):.1f} | {_ms(floor.modules[module], runs):.1f} |")
    threads = ", ".join(f"{name} {_ms(n, runs):.1f}" for name, n in ours.threads.most_common(6))
    lines += ["", f"{key} by thread (ms/run): {threads}"]
    return "\n".join(lines)


async def _pyinstrument(prepared: dict[str, Prepared], keys: list[str], runs: int, out_dir: Path) -> str:
    from pyinstrument import Profiler

    parts: list[str] = []
    for key in keys:
        profiler = Profiler(interval=0.0005, async_mode="disabled")
        profiler.start()
        for _ in range(runs):
            await timed_run(prepared[key], key)
        profiler.stop()
        (out_dir / f"{key}.html").write_text(profiler.output_html())
        text = profiler.output_text(unicode=False, color=False, show_all=False)
        parts.append(f"#### {key} (pyinstrument, main thread only, wall time)\n\n```\n{text[:6000]}\n```")
    return "\n\n".join(parts)


async def profile(
    prepared: dict[str, Prepared],
    keys: list[str],
    runs: int,
    last: dict[str, WorkflowHandle[Any, Any]],
    floors: dict[str, str] | None = None,
) -> str:
    """Profile `keys` and their floors over `runs` runs each; returns the report (also saved under `.bench/`).

    `floors` names each key's floor (default: `floor` for all).
    """
    base_of = {key: (floors or {}).get(key, "floor") for key in keys}
    every = list(dict.fromkeys([*base_of.values(), *keys]))
    out_dir = OUT_ROOT / f"profile-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = _py_spy()
    sections: list[str] = []
    try:
        if binary is None:
            raise RuntimeError("py-spy is not installed")
        results: dict[str, tuple[Samples, float]] = {}
        for key in every:
            print(f"profiling {key}: {runs} runs under py-spy ...", file=sys.stderr, flush=True)
            cpu = await _record(prepared[key], key, runs, binary, out_dir / f"{key}.txt")
            results[key] = (Samples.parse(out_dir / f"{key}.txt"), cpu)
        sections += [_report(results, key, runs, base_of[key]) for key in keys]
    except (RuntimeError, OSError) as err:
        print(f"py-spy unavailable ({err}); falling back to pyinstrument", file=sys.stderr, flush=True)
        sections.append(await _pyinstrument(prepared, every, runs, out_dir))
    histories = {key: History(events=(await last[key].fetch_history()).events) for key in every}
    sections.append("#### history anatomy (one run each)\n\n" + anatomy_table(histories))
    text = "\n\n".join(sections)
    (out_dir / "report.md").write_text(text + "\n")
    return f"### profile (raw stacks and this report are in {out_dir})\n\n{text}"
