"""A worker killed in the middle of a memory write leaves exactly one item (PostgreSQL, two worker processes).

The test holds an exclusive lock on the store's table, so worker A's `memory_save` waits inside
its INSERT; A is killed with SIGKILL there, worker B starts and the lock is released. The server
finishes the dead worker's INSERT once it has the lock (it notices the lost client only when it
answers); B's retry of the same call carries the same write id
(`activities.tools.tool_calls.idempotency_key`), and the save names no key (its key derives from
that id), so the store keeps one item, and the run ends as if nothing had happened. Nothing
waits on the clock: each step waits for what it needs (the worker's log line, the INSERT
waiting on the lock in `pg_stat_activity`, the run's result).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import psycopg

from clients.sessions import Sessions
from contracts.memory import MemoryConfig
from store import open_store
from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call
from tests.postgres_server import fresh_database
from tests.worker_processes import WorkerProcess

SAFETY_BOUND_S = 180
"""Fail instead of hanging if something never happens."""
MEMORY = MemoryConfig(tools=True, recall=0, namespace="kill-prefs")


async def insert_waiting(url: str) -> None:
    """Return once an INSERT into the memory table waits for a lock (the worker is inside its write)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as watcher:
        while True:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE 'INSERT INTO memory_items%%'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.1)


async def test_a_worker_killed_mid_write_leaves_exactly_one_item(
    agents: AgentTestEnvironment, postgres_url: str, tmp_path: Path
) -> None:
    url = fresh_database(postgres_url, f"kill_{uuid.uuid4().hex[:8]}")
    async with open_store(url):
        pass  # migrated before any worker writes
    address, queue = agents.client.service_client.config.target_host, f"kill-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "REACT_STORE_URL": url,
        # The killed worker's write is retried 5 s after it started (the deployment's override).
        "REACT_ACTIVITY_OPTIONS": json.dumps({"memory_save": {"start_to_close_timeout_s": 5}}),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    principal = f"k{uuid.uuid4().hex[:8]}"
    session = Sessions(agents.client, task_queue=queue).get(
        f"gw/{principal}/assistant/t-{uuid.uuid4().hex[:8]}"
    )
    config = scripted_agent(
        # No key: the item's key is derived from the write id, so a second write id would be a second item.
        call_tools(tool_call("memory_save", {"text": "The user takes tea with lemon"})),
        answer("I will remember that."),
        memory=MEMORY,
    )
    first = WorkerProcess("a", address, queue, env, tmp_path, tools=())
    second: WorkerProcess | None = None
    lock = await psycopg.AsyncConnection.connect(url)
    try:
        async with asyncio.timeout(SAFETY_BOUND_S):
            await lock.execute("LOCK TABLE memory_items IN ACCESS EXCLUSIVE MODE")  # held until commit
            await first.polling()
            accepted = await session.ask("I take tea with lemon.", config=config, agent_id="assistant")
            await insert_waiting(url)
            first.kill()
            second = WorkerProcess("b", address, queue, env, tmp_path, tools=())
            await second.polling()
            await lock.commit()  # the dead worker's INSERT may now finish; B's retry writes the same id
            result = await session.await_result(accepted.request_id)
    finally:
        await lock.close()
        first.kill()
        if second is not None:
            second.kill()
    assert result.status == "completed", result
    assert result.result == "I will remember that."
    async with open_store(url) as store:
        page = await store.list((principal,))
    assert [item.text for item in page.items] == ["The user takes tea with lemon"]
