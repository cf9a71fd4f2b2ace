"""The second environment: a venv for peers that cannot be installed next to litellm 1.106.

The OpenAI Agents SDK's Temporal plugin (`temporalio-openai-agents` 1.1) requires openai >= 3
and litellm 1.106 requires openai < 3, so that peer runs in `.bench/openai-agents-env`,
installed from the hash-pinned `openai-agents-requirements.txt` (with `uv`), and measured
there against its own floor, on the same dev server, by running this benchmark again in it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

from bench._harness import Figures

REPO = Path(__file__).resolve().parents[2]
ENV_DIR = REPO / ".bench" / "openai-agents-env"
REQUIREMENTS = Path(__file__).with_name("openai-agents-requirements.txt")
_STAMP = "requirements.sha256"


class SecondEnvError(RuntimeError):
    """The second environment could not be created or did not run; the message says why."""


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def ensure_env() -> Path:
    """The second environment's Python, creating or updating the environment when needed.

    Raises:
        SecondEnvError: `uv` is missing, or creating the venv or installing into it failed.
    """
    python = ENV_DIR / "bin" / "python"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    stamp = ENV_DIR / _STAMP
    if python.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
        return python
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        raise SecondEnvError("`uv` is not on PATH (scripts/setup.sh installs it)")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    steps = [
        [uv, "venv", "--quiet", "--clear", "--python", version, str(ENV_DIR)],
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--require-hashes",
            "-r",
            str(REQUIREMENTS),
        ],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise SecondEnvError(f"`{' '.join(step[:3])} ...` failed: {_tail(done.stderr or done.stdout)}")
    stamp.write_text(wanted + "\n")
    return python


def run_in_env(python: Path, address: str, scenarios: list[str], options: list[str]) -> dict[str, Any]:
    """Run `bench.overhead` in the second environment against `address`; returns its JSON report.

    Raises:
        SecondEnvError: the run failed; the message has the end of its error output.
    """
    out = ENV_DIR / "last-run.json"
    out.unlink(missing_ok=True)
    command = [
        str(python), "-m", "bench.overhead", "--address", address,
        "--scenarios", ",".join(scenarios), "--json", str(out), "--no-report", *options,
    ]  # fmt: skip
    # The child's progress lines are echoed as they come; its figures come back as JSON.
    tail: deque[str] = deque(maxlen=12)
    with subprocess.Popen(command, cwd=REPO, stdout=sys.stderr, stderr=subprocess.PIPE, text=True) as child:
        assert child.stderr is not None
        for line in child.stderr:
            tail.append(line)
            print(f"  [second env] {line}", end="", file=sys.stderr, flush=True)
    if child.returncode != 0 or not out.exists():
        raise SecondEnvError(f"the run in the second environment failed: {_tail(''.join(tail), 12)}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def _child_options(args: argparse.Namespace) -> list[str]:
    return [
        "--runs", str(args.runs), "--warmup", str(args.warmup), "--concurrent", str(args.concurrent),
        "--concurrent-rounds", str(args.concurrent_rounds),
    ]  # fmt: skip


def measure_in_env(
    address: str, args: argparse.Namespace, provider_url: str | None
) -> tuple[list[Figures], dict[str, str]]:
    """The second environment's figures (its floors and peers) and the peers it could not measure, with why.

    The provider-path peer is measured when `provider_url` (the running provider server) is given.
    """
    from bench.scenarios import PEERS_SECOND_ENV, SCENARIOS

    peers = [key for key in PEERS_SECOND_ENV if provider_url is not None or SCENARIOS[key].floor == "floor"]
    options = _child_options(args) + (["--provider-url", provider_url] if provider_url else [])
    try:
        print(
            "second environment: preparing .bench/openai-agents-env (openai >= 3) ...",
            file=sys.stderr,
            flush=True,
        )
        python = ensure_env()
        result = run_in_env(python, address, peers, options)
    except SecondEnvError as err:
        return [], dict.fromkeys(peers, str(err))
    figures = [Figures(**item) for item in result["figures"]]
    return figures, dict(result["skipped"])
