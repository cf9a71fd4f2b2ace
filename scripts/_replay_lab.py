"""What `scripts/record_histories.py` records with: a dev server, a worker, runs and sessions (plain JSON)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any


class Lab:
    """The recording setup: a dev server, its client, and one worker that scenarios may replace."""

    def __init__(self, env: Any, work: Path) -> None:
        self.env = env
        self.client: Any = env.client
        self.queue = f"record-{uuid.uuid4().hex[:8]}"
        self._work = work
        self._workers = 0
        self._running: tuple[Any, asyncio.Task[None]] | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def start(cls, work: Path) -> AsyncIterator[Lab]:
        """A dev server (continue-as-new suggested at 120 events, like the tests') and a worker."""
        from temporalio.testing import WorkflowEnvironment

        from hosting.data_converter import build_data_converter
        from hosting.dev_server import temporal_binary

        async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
            data_converter=build_data_converter(),
            dev_server_existing_path=temporal_binary(),
            dev_server_log_level="error",
            dev_server_extra_args=["--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=120"],
        ) as env:
            lab = cls(env, work)
            await lab.start_worker()
            try:
                yield lab
            finally:
                await lab.stop_worker()

    @contextlib.asynccontextmanager
    async def live_channel(self) -> AsyncIterator[None]:
        """The worker replaced by one writing to a live channel (a `redis-server` of its own), then back."""
        from live.channel import LIVE_URL_ENV
        from live.dev_redis import free_port, start_redis

        port = free_port()
        server = start_redis(port)
        await self.stop_worker()
        os.environ[LIVE_URL_ENV] = f"redis://127.0.0.1:{port}/0"  # the worker's plugin reads it when built
        try:
            await self.start_worker()
        finally:
            os.environ.pop(LIVE_URL_ENV, None)
        try:
            yield
        finally:
            await self.stop_worker()
            server.terminate()
            server.wait(10)
            await self.start_worker()

    async def start_worker(self) -> None:
        """Start a worker whose message cache and archive use a store of their own (empty)."""
        from payloads.blob_store import LocalDiskBlobStore
        from tests.agent_tools import profiles_for_tests, registry_for_tests, transformers_for_tests
        from worker import build_worker

        self._workers += 1
        worker = build_worker(
            self.client,
            task_queue=self.queue,
            registry=registry_for_tests(),
            agents=profiles_for_tests(),
            transformers=transformers_for_tests(),
            store=LocalDiskBlobStore(self._work / f"worker-{self._workers}"),
            max_cached_workflows=0,
            graceful_shutdown_timeout=timedelta(seconds=20),
        )
        self._running = (worker, asyncio.create_task(worker.run()))

    async def stop_worker(self) -> None:
        """Stop polling; activities in flight finish first (they report their results)."""
        if self._running is not None:
            worker, task = self._running
            self._running = None
            await worker.shutdown()
            await task

    async def start_run(
        self,
        name: str,
        query: str,
        script: list[dict[str, Any]],
        context: dict[str, Any] | None = None,
        **config: Any,
    ) -> Any:
        """Start a `ReActRun` with the scripted model, under the workflow id `replay-<name>-<random>`."""
        run: dict[str, Any] = {"query": query, "config": _config(script, **config)}
        if context is not None:
            run["context"] = context
        return await self.client.start_workflow(
            "ReActRun",
            run,
            id=f"replay-{name}-{uuid.uuid4().hex[:8]}",
            task_queue=self.queue,
        )

    async def until_tool_runs(self, workflow_id: str) -> None:
        """Wait until the run has started a tool (its trace says so)."""
        handle = self.client.get_workflow_handle(workflow_id)
        from temporalio.service import RPCError, RPCStatusCode

        for _ in range(200):
            try:
                trace = await handle.query("trace")
            except RPCError as error:  # a session's run that has not started yet
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                trace = {"events": []}
            if any(event["kind"] == "tool_started" for event in trace["events"]):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{workflow_id} started no tool within 10 s")


class Session:
    """One `AgentSession` driven the way `clients.sessions` does, with plain JSON."""

    def __init__(self, lab: Lab, name: str, **start: Any) -> None:
        self.lab = lab
        self.id = f"replay-{name}-{uuid.uuid4().hex[:8]}"
        self.start_input = {"agent_id": "replay", "config": _config([]), **start}
        self.children: list[str] = []
        self.handle: Any = lab.client.get_workflow_handle(self.id)

    async def ask(self, query: str, *turns: dict[str, Any], on_busy: str = "reject") -> str:
        """Ask (update-with-start); return the request id."""
        from temporalio.client import WithStartWorkflowOperation
        from temporalio.common import WorkflowIDConflictPolicy

        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "AgentSession",
            self.start_input,
            id=self.id,
            task_queue=self.lab.queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        accepted = await self.lab.client.execute_update_with_start_workflow(
            "ask",
            {"query": query, "overrides": {"script": list(turns)} if turns else {}, "on_busy": on_busy},
            start_workflow_operation=start,
        )
        if accepted["run_workflow_id"] not in self.children:
            self.children.append(accepted["run_workflow_id"])
        return accepted["request_id"]

    async def result(self, request_id: str) -> dict[str, Any]:
        """The request's record with its answer, once terminal."""
        return await self.handle.execute_update("await_result", {"request_id": request_id})

    async def update(self, name: str, payload: dict[str, Any]) -> Any:
        """An Update of the session (its answer)."""
        return await self.handle.execute_update(name, payload)

    @property
    def ids(self) -> list[str]:
        """The session's workflow id and its runs'."""
        return [self.id, *self.children]


def _config(script: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"model": "scripted", "script": script, "tools": ["calculator", "slow"], **fields}
