"""The worker: runs `ReActRun` and `AgentSession` workflows and their activities on task queue `react-agent`.

    python worker.py            # connect to TEMPORAL_ADDRESS (default localhost:7233)
    python worker.py --dev      # start the embedded dev server first if none answers (Web UI :8233)

API keys are read from this process's environment by the LLM activity (litellm's usual
variables: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); they never enter workflow history.
Session snapshot tokens are signed with REACT_SNAPSHOT_SECRET (export/restore refuse to
work without a strong one).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.archive import ArchiveActivities
from activities.llm import LLMActivities
from activities.message_cache import MessageCache
from activities.snapshot import export_snapshot, restore_snapshot
from activities.summarize import summarize
from activities.token_count import count_tokens
from activities.tool_registry import ToolRegistry, default_registry
from activities.tools import ToolActivities
from contracts import TASK_QUEUE
from runtime.blob_store import BlobStore, LocalDiskBlobStore
from runtime.connection import connect, temporal_address, temporal_namespace
from runtime.dev_server import DevServerError, ensure_dev_server
from workflows import AgentSession, ReActRun


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
        store: the payload store of the message cache and thread archive (default: `.temporal/payloads`).
        worker_options: passed to `temporalio.worker.Worker` (tests pass `max_cached_workflows=0`).
    """
    registry = registry or default_registry()
    store = store or LocalDiskBlobStore(Path(".temporal") / "payloads")
    tools = ToolActivities(registry)
    llm = LLMActivities(registry, MessageCache(store))
    archive = ArchiveActivities(store)
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
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    server = await ensure_dev_server(args.address) if args.dev else None
    if server is not None:
        logging.info("started the Temporal dev server on %s (Web UI http://localhost:8233)", args.address)
    try:
        try:
            client = await connect(args.address, args.namespace)
        except RuntimeError as err:
            raise SystemExit(
                f"worker: cannot reach Temporal at {args.address} ({err}); "
                "start a server, or run `python worker.py --dev` for the embedded one"
            ) from err
        worker = build_worker(client, task_queue=args.task_queue)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        logging.info("worker polling task queue %r on %s", args.task_queue, args.address)
        async with worker:
            await stop.wait()
    finally:
        if server is not None:
            server.terminate()
            with contextlib.suppress(Exception):
                server.wait(timeout=10)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except DevServerError as err:
        # Connection and start-up failures are one clear line, not a traceback.
        sys.exit(f"worker: {err}")
