"""`client.py schedule ...` as a user runs it: separate processes against the real dev server and a worker."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.client import Client

from clients.schedules import Schedules
from contracts import TASK_QUEUE
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    """A worker on the product's task queue (where the CLI's schedules fire)."""
    worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
    async with worker:
        yield TASK_QUEUE


async def cli(client: Client, *args: str) -> tuple[int, str, str]:
    """Run `client.py ARGS` to its end: exit code, stdout, stderr."""
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host, "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "client.py",
        *args,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_schedule_is_created_listed_shown_paused_triggered_and_deleted_from_the_cli(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    owner, conversation = f"cli-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:8]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "nothing new"}]), encoding="utf-8")
    code, out, err = await cli(
        client,
        "schedule",
        "create",
        "Anything new?",
        "--name",
        "hourly",
        "--owner",
        owner,
        "--every",
        "1",
        "--conversation",
        conversation,
        "--script",
        str(script),
        "--json",
    )
    assert code == 0, err
    created = json.loads(out)
    schedule_id = f"schedule/{owner}/hourly"
    assert (created["schedule_id"], created["session_id"], created["overlap"]) == (
        schedule_id,
        f"agent-{conversation}",
        "skip",
    )
    schedules = Schedules(client)
    deadline = asyncio.get_running_loop().time() + 30
    while not any(f.status == "asked" for f in (await schedules.describe(schedule_id)).recent_firings):
        assert asyncio.get_running_loop().time() < deadline, "no firing asked within 30 s"
        await asyncio.sleep(0.3)

    code, out, err = await cli(client, "schedule", "pause", "hourly", "--owner", owner, "--note", "lunch")
    assert (code, out.strip()) == (0, f"paused {schedule_id}: lunch"), err
    code, out, err = await cli(client, "schedule", "show", schedule_id)
    assert code == 0, err
    assert f"schedule {schedule_id} · paused: lunch" in out and f"thread agent-{conversation}" in out
    assert "every 1 s · agent default" in out and "request schedule." in out
    code, out, err = await cli(client, "schedule", "list", "--owner", owner, "--json")
    assert code == 0 and [v["schedule_id"] for v in json.loads(out)] == [schedule_id], err
    code, out, err = await cli(client, "schedule", "trigger", "hourly", "--owner", owner)
    assert (code, out.strip()) == (0, f"triggered {schedule_id}"), err
    code, out, err = await cli(client, "schedule", "delete", schedule_id)
    assert (code, out.strip()) == (0, f"deleted {schedule_id}"), err
    code, out, err = await cli(client, "schedule", "show", schedule_id)
    assert code == 1 and "not_found" in err


async def test_bad_schedules_are_refused_by_name_from_the_cli(client: Client, product_queue: str) -> None:
    owner = f"cli-{uuid.uuid4().hex[:6]}"
    code, _, err = await cli(client, "schedule", "create", "x", "--owner", owner, "--cron", "99 * * * *")
    assert code == 1 and "invalid_input" in err and "cron:" in err
    code, _, err = await cli(
        client, "schedule", "create", "x", "--owner", owner, "--cron", "@daily", "--timezone", "Moon/Base"
    )
    assert code == 1 and "timezone:" in err
    code, out, _ = await cli(client, "schedule", "list", "--owner", owner)
    assert out.strip() == f"no schedules of {owner}"
