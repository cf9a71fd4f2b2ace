"""The worker: runs `ReActRun` and `AgentSession` workflows and their activities on task queue `react-agent`.

    python worker.py            # connect to TEMPORAL_ADDRESS (default localhost:7233)
    python worker.py --dev      # start the embedded dev server first if none answers (Web UI :8233)
    python worker.py --tools mypackage.tools --mcp-config mcp.json   # your tools, MCP servers (docs/tools.md)

API keys are read from this process's environment by the LLM activity (litellm's usual
variables: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); they never enter workflow history.
Session snapshot tokens are signed with REACT_SNAPSHOT_SECRET (export/restore refuse to
work without a strong one). Large payloads go to the payload store, payloads may be
encrypted, and TLS/API-key settings apply: see `payloads.settings` (REACT_PAYLOAD_STORE,
REACT_ENCRYPTION_KEYS, TEMPORAL_TLS_*, TEMPORAL_API_KEY, ...).

Workflows run outside Temporal's sandbox unless `--sandbox` (or REACT_WORKFLOW_SANDBOX=on)
asks for it: see `hosting.sandbox.workflow_runner`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
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
from hosting.sandbox import workflow_runner
from payloads.blob_store import BlobStore, blob_store_from_env
from workflows.agent_session import AgentSession
from workflows.react_run import ReActRun


def build_worker(
    client: Client,
    *,
    task_queue: str = TASK_QUEUE,
    registry: ToolRegistry | None = None,
    store: BlobStore | None = None,
    sandboxed: bool = False,
    **worker_options: Any,
) -> Worker:
    """A worker with every workflow, activity and tool of the product registered.

    Args:
        client: a client built with the pydantic data converter (`hosting.connection.connect`).
        task_queue: the queue to poll.
        registry: the tools this worker offers (default: the built-in ones, e.g. `calculator`).
        store: the payload store of the message cache and the thread archive (default: the one
            `REACT_PAYLOAD_STORE` names; it must be the store the client's claim check uses).
        sandboxed: run the workflows in Temporal's full sandbox (see `workflow_runner`).
        worker_options: passed to `temporalio.worker.Worker` (tests pass `max_cached_workflows=0`).
    """
    registry = registry or default_registry()
    store = store or blob_store_from_env()
    tools = ToolActivities(registry)
    llm = LLMActivities(registry, MessageCache(store))
    archive = ArchiveActivities(store)
    worker_options.setdefault("workflow_runner", workflow_runner(sandboxed=sandboxed))
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


if __name__ == "__main__":
    from hosting.worker_process import main

    main(__doc__ or "")
