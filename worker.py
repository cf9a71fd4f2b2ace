"""The worker: runs `ReActRun` and `AgentSession` workflows and their activities on task queue `react-agent`.

    python worker.py            # connect to TEMPORAL_ADDRESS (default localhost:7233)
    python worker.py --dev      # start the embedded dev server first if none answers (Web UI :8233)
    python worker.py --tools mypackage.tools --mcp-config mcp.json   # your tools, MCP servers (docs/tools.md)
    python worker.py --agents mypackage.agents   # agent profiles, offered to runs as tools (docs/tools.md)
    python worker.py --metrics-port 9464         # Prometheus metrics at :9464/metrics (docs/metrics.md)

API keys are read from this process's environment by the LLM activity (litellm's usual
variables: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); they never enter workflow history.
Session snapshot tokens are signed with REACT_SNAPSHOT_SECRET (export/restore refuse to
work without a strong one). Large payloads go to the payload store, payloads may be
encrypted, and TLS/API-key settings apply: see `settings.deployment` (REACT_PAYLOAD_STORE,
REACT_ENCRYPTION_KEYS, TEMPORAL_TLS_*, TEMPORAL_API_KEY, REACT_ACTIVITY_OPTIONS, ...).

Workflows run outside Temporal's sandbox unless `--sandbox` (or REACT_WORKFLOW_SANDBOX=on)
asks for it: see `hosting.sandbox.workflow_runner`. Everything the worker registers comes
from `hosting.plugin.DurableReactPlugin`; a team's own worker can use the plugin directly.
"""

from __future__ import annotations

import warnings
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.llm.request_transformers import RequestTransformers
from activities.tools.agent_profiles import AgentProfiles
from activities.tools.tool_registry import ToolRegistry
from contracts import TASK_QUEUE
from hosting.plugin import DurableReactPlugin
from payloads.blob_store import BlobStore, blob_store_from_env


def build_worker(
    client: Client,
    *,
    task_queue: str = TASK_QUEUE,
    registry: ToolRegistry | None = None,
    agents: AgentProfiles | None = None,
    transformers: RequestTransformers | None = None,
    store: BlobStore | None = None,
    sandboxed: bool = False,
    memory_store_url: str | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker with every workflow, activity and tool of the product registered (by the plugin).

    Args:
        client: a client with the product's data converter (`hosting.connection.connect`).
        task_queue: the queue to poll.
        registry: the tools this worker offers (default: the built-in ones, e.g. `calculator`).
        agents: the agent profiles runs may offer as tools (default: none; docs/tools.md).
        transformers: the request transformers configs may name (default: none; the README).
        store: the payload store of the message cache and the thread archive (default: the one
            `REACT_PAYLOAD_STORE` names; it must be the store the client's claim check uses).
        sandboxed: run the workflows in Temporal's full sandbox (see `workflow_runner`).
        memory_store_url: the long-term store of the memory activities (default `REACT_STORE_URL`).
        worker_options: passed to `temporalio.worker.Worker` (tests pass `max_cached_workflows=0`).
    """
    plugin = DurableReactPlugin(
        registry=registry,
        agents=agents,
        transformers=transformers,
        store=store or blob_store_from_env(),
        sandboxed=sandboxed,
        memory_store_url=memory_store_url,
    )
    with warnings.catch_warnings():
        # A client from `connect()` carries a DurableReactPlugin too: this worker's own wins by design.
        warnings.filterwarnings(
            "ignore", message="The same plugin type .*DurableReactPlugin", category=UserWarning
        )
        return Worker(client, task_queue=task_queue, plugins=[plugin], **worker_options)


if __name__ == "__main__":
    from hosting.worker_process import main

    main(__doc__ or "")
