"""`client.py agents ...`, as a user runs it: a real process on a real store, and the worker's check of tools.

The tool check runs `AgentConfigCheck` on the tests' worker (a real dev server): a config naming a
tool no worker registered is refused by name and nothing is written.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from testing import AgentTestEnvironment

ROOT = Path(__file__).resolve().parents[2]


def cli(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "client.py", "agents", *args, "--store-url", url]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)


def test_create_publish_show_roll_back_and_refusals(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    v1, v2, bad = tmp_path / "v1.json", tmp_path / "v2.json", tmp_path / "bad.json"
    v1.write_text(json.dumps({"model": "scripted", "system_prompt": "You are v1."}))
    v2.write_text(json.dumps({"model": "scripted", "system_prompt": "You are v2."}))
    bad.write_text(json.dumps({"model": "scripted", "system_promt": "typo"}))
    made = cli(url, "create", "helper", str(v1), "--note", "first", "--by", "carol")
    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(made.stdout) == {"name": "helper", "version": 1}
    assert json.loads(cli(url, "publish", "helper", str(v2)).stdout) == {"name": "helper", "version": 2}
    refused = cli(url, "publish", "helper", str(bad))
    assert refused.returncode == 1 and "invalid_input" in refused.stdout and "system_promt" in refused.stdout
    assert json.loads(cli(url, "set-latest", "helper", "1").stdout) == {"name": "helper", "latest": 1}
    missing = cli(url, "set-latest", "helper", "9")
    assert missing.returncode == 1 and "unknown_version" in missing.stdout
    shown = json.loads(cli(url, "show", "helper").stdout)
    assert shown["latest"] == 1
    assert [(v["version"], v["note"], v["created_by"]) for v in shown["versions"]] == [
        (1, "first", "carol"),
        (2, "", "local"),
    ]
    assert [json.loads(line) for line in cli(url, "list").stdout.splitlines()] == [
        {"name": "helper", "latest": 1}
    ]


async def test_a_tool_no_worker_has_is_refused_by_the_workers(
    agents: AgentTestEnvironment, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    unknown, known = tmp_path / "unknown.json", tmp_path / "known.json"
    unknown.write_text(json.dumps({"model": "scripted", "tools": ["no_such_tool"]}))
    known.write_text(json.dumps({"model": "scripted", "tools": ["calculator"]}))
    env = {**os.environ, "TEMPORAL_ADDRESS": agents.temporal.client.service_client.config.target_host}
    queue = ["--task-queue", agents.task_queue]
    refused = await asyncio.to_thread(cli, url, "create", "tooled", str(unknown), *queue, env=env)
    assert refused.returncode == 1 and "unknown_tool" in refused.stdout and "no_such_tool" in refused.stdout
    assert (await asyncio.to_thread(cli, url, "list")).stdout == ""  # nothing was written
    made = await asyncio.to_thread(cli, url, "create", "tooled", str(known), *queue, env=env)
    assert made.returncode == 0, made.stdout + made.stderr
