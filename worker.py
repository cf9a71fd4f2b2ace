"""The worker: runs `ReActRun` and `AgentSession` workflows and their activities on task queue `react-agent`.

    python worker.py            # connect to TEMPORAL_ADDRESS (default localhost:7233)
    python worker.py --dev      # start the embedded dev server first if none answers (Web UI :8233)
    python worker.py --tools mypackage.tools --mcp-config mcp.json   # your tools, MCP servers (docs/tools.md)

API keys are read from this process's environment by the LLM activity (litellm's usual
variables: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); they never enter workflow history.
Session snapshot tokens are signed with REACT_SNAPSHOT_SECRET (export/restore refuse to
work without a strong one). Large payloads go to the payload store, payloads may be
encrypted, and TLS/API-key settings apply: see `runtime.settings` (REACT_PAYLOAD_STORE,
REACT_ENCRYPTION_KEYS, TEMPORAL_TLS_*, TEMPORAL_API_KEY, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.archive import ArchiveActivities
from activities.llm import LLMActivities, warm_litellm
from activities.mcp_config import McpConfigError
from activities.mcp_tools import McpStartError, mcp_tools
from activities.message_cache import MessageCache
from activities.snapshot import export_snapshot, restore_snapshot
from activities.summarize import summarize
from activities.token_count import count_tokens
from activities.tool_loading import (
    MCP_CONFIG_ENV,
    TOOLS_ENV,
    ToolLoadError,
    build_tool_registry,
    load_mcp_servers,
    option_values,
)
from activities.tool_registry import ToolRegistry, default_registry
from activities.tools import ToolActivities
from contracts import TASK_QUEUE
from runtime.blob_store import BlobStore, BlobStoreError, blob_store_from_env, shared_blob_store
from runtime.connection import connect, temporal_address, temporal_namespace
from runtime.dev_server import DevServerError, ensure_dev_server
from runtime.local_model import configured_model_problem, stop_started
from runtime.redaction import install_log_redaction
from runtime.settings import SettingsError, load_settings
from workflows.agent_session import AgentSession
from workflows.react_run import ReActRun

PASSTHROUGH_PACKAGES = ("workflows", "contracts", "conversation")
"""The product's deterministic packages, shared by all workflow runs instead of re-imported per run."""


def build_worker(
    client: Client,
    *,
    task_queue: str = TASK_QUEUE,
    registry: ToolRegistry | None = None,
    store: BlobStore | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker with every workflow, activity and tool of the product registered.

    Args:
        client: a client built with the pydantic data converter (`runtime.connection.connect`).
        task_queue: the queue to poll.
        registry: the tools this worker offers (default: the built-in ones, e.g. `calculator`).
        store: the payload store of the message cache and the thread archive (default: the one
            `REACT_PAYLOAD_STORE` names; it must be the store the client's claim check uses).
        worker_options: passed to `temporalio.worker.Worker` (tests pass `max_cached_workflows=0`).
    """
    registry = registry or default_registry()
    store = store or blob_store_from_env()
    tools = ToolActivities(registry)
    llm = LLMActivities(registry, MessageCache(store))
    archive = ArchiveActivities(store)
    # The product's own packages are deterministic by design (tests/test_workflow_rules.py checks
    # them statically; the replay tests run them fully sandboxed) and hold no mutable module
    # state, so the sandbox may share them: re-importing them for every run cost about 19 ms of
    # CPU per run here, against 1 ms shared (see docs/architecture.md, "Performance").
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_PACKAGES)
    worker_options.setdefault("workflow_runner", SandboxedWorkflowRunner(restrictions=restrictions))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ReActRun, AgentSession],
        activities=[
            llm.llm_call,
            tools.run_tool,
            tools.resolve_tools,
            export_snapshot,
            restore_snapshot,
            summarize,
            count_tokens,
            archive.archive_segment,
            archive.read_segment,
        ],
        activity_executor=ThreadPoolExecutor(max_workers=16),
        # Heartbeats reach the server at least every 2 s, so a cancel reaches an
        # in-flight LLM call quickly and a 10 s heartbeat timeout has ample slack.
        max_heartbeat_throttle_interval=timedelta(seconds=2),
        default_heartbeat_throttle_interval=timedelta(seconds=2),
        **worker_options,
    )


async def main() -> None:
    """Parse flags, optionally start the dev server, and run the worker until interrupted."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--address", default=temporal_address(), help="Temporal frontend (host:port)")
    parser.add_argument("--namespace", default=temporal_namespace())
    parser.add_argument("--task-queue", default=os.environ.get("REACT_TASK_QUEUE", TASK_QUEUE))
    parser.add_argument("--dev", action="store_true", help="start the embedded dev server if none answers")
    parser.add_argument(
        "--tools",
        action="append",
        metavar="MODULE",
        help=f"import a module of your tools (repeatable; default ${TOOLS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--mcp-config",
        action="append",
        metavar="FILE",
        help=f"a JSON file of MCP servers to use as tools (repeatable; default ${MCP_CONFIG_ENV})",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_redaction()  # secrets echoed by providers never reach the log (the SDK logs tracebacks)

    # A model chosen by $REACT_MODEL without its key: one line now, not a failed run later.
    model_problem = await asyncio.to_thread(configured_model_problem)
    if model_problem:
        raise SystemExit(f"worker: {model_problem}")
    registry = build_tool_registry(option_values(args.tools, TOOLS_ENV))
    mcp_servers = load_mcp_servers(option_values(args.mcp_config, MCP_CONFIG_ENV))
    settings = load_settings()
    store = shared_blob_store(settings.payload_store)
    try:
        await store.check()
        server = (
            await ensure_dev_server(args.address, ui_codec_endpoint=settings.codec_endpoint)
            if args.dev
            else None
        )
    except BaseException:
        await store.aclose()  # the S3 store's connection pool, before the process exits
        raise
    if server is not None:
        logging.info("started the Temporal dev server on %s (Web UI http://localhost:8233)", args.address)
    try:
        try:
            client = await connect(args.address, args.namespace, settings=settings)
        except RuntimeError as err:
            raise SystemExit(
                f"worker: cannot reach Temporal at {args.address} ({err}); "
                "start a server, or run `python worker.py --dev` for the embedded one"
            ) from err
        worker = build_worker(
            client, task_queue=args.task_queue, registry=registry, store=blob_store_from_env()
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        logging.info(
            "payload store %s (payloads of %d bytes or more are stored there); encryption %s",
            store.describe(),
            settings.payload_threshold,
            f"on (key {settings.encryption_keys[0].key_id})" if settings.encryption_on else "off",
        )
        # MCP servers connect (and register their tools) before polling starts, and close after it stops.
        async with mcp_tools(mcp_servers, registry), worker:
            logging.info("worker polling task queue %r on %s", args.task_queue, args.address)
            # litellm takes seconds to import: load it now that polling has started, so
            # neither start-up nor the first LLM call waits for it.
            threading.Thread(target=warm_litellm, name="litellm-warm-up", daemon=True).start()
            await stop.wait()
    finally:
        await asyncio.to_thread(stop_started)  # the local model server, if this worker started one
        await store.aclose()
        if server is not None:
            server.terminate()
            with contextlib.suppress(Exception):
                server.wait(timeout=10)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except (
        DevServerError,
        SettingsError,
        BlobStoreError,
        ToolLoadError,
        McpConfigError,
        McpStartError,
    ) as err:
        # Connection and start-up failures are one clear line, not a traceback.
        sys.exit(f"worker: {err}")
