"""`client.py usage`, as an operator runs it: a real process on a real store with rows in it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from contracts.run import RunStatus
from contracts.usage import UsageRecord
from store import open_store

ROOT = Path(__file__).resolve().parents[2]


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "client.py", "usage", *args, "--store-url", url]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


async def write_rows(url: str) -> None:
    async with open_store(url) as store:
        requests: list[tuple[str, RunStatus]] = [
            ("alice", "completed"),
            ("alice", "failed"),
            ("bob", "completed"),
        ]
        for n, (principal, status) in enumerate(requests):
            await store.usage.record(
                UsageRecord(
                    session_id=f"gw/{principal}/helper/t",
                    request_id=f"r{n}",
                    principal=principal,
                    agent="helper",
                    status=status,
                    day="2026-12-01",
                    ended_at=1_800_000_000.0,
                    latency_ms=100 * (n + 1),
                    prompt_tokens=10,
                    completion_tokens=2,
                )
            )


def test_everyone_s_rows_one_principal_s_and_a_refusal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    asyncio.run(write_rows(url))
    days = ("--from", "2026-12-01", "--to", "2026-12-01")
    everyone = cli(url, *days, "--group-by", "agent")
    assert everyone.returncode == 0, everyone.stderr
    rows = [json.loads(line) for line in everyone.stdout.splitlines()]
    assert [(r["principal"], r["agent"], r["requests"], r["failed"]) for r in rows] == [
        ("alice", "helper", 2, 1),
        ("bob", "helper", 1, 0),
    ]
    alice = [json.loads(line) for line in cli(url, *days, "--principal", "alice").stdout.splitlines()]
    assert [(r["agent"], r["version"], r["day"], r["prompt_tokens"]) for r in alice] == [
        ("helper", None, "2026-12-01", 20)
    ]
    assert "principal" not in alice[0]
    refused = cli(url, "--group-by", "agent,model")
    assert refused.returncode == 1 and "invalid_input" in refused.stdout and "'model'" in refused.stdout
