"""The worker process: flags, start-up checks, the embedded dev server and its live channel, a clean exit.

`python worker.py` runs `main()`. Everything that can be wrong with the setup (a model
without its key, a tools module that does not import, an unusable payload store, a bad
setting, an unreachable server) ends the process with one clear line, before polling.
Heavy imports stay off the start-up path: litellm loads in the background once
polling has started (`hosting.warm_up`, which then freezes start-up's objects out of garbage
collection), and the MCP client only when MCP servers are configured.
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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.runtime import Runtime
from temporalio.worker import Worker

from activities.llm.model_check import configured_model_problem
from activities.llm.models.local_model import (
    BUNDLED_MODEL,
    DEFAULT_API_BASE,
    LocalModelError,
    ensure_server,
    missing_install,
    stop_started,
)
from activities.llm.request_transformers import TRANSFORMERS_ENV, build_transformers
from activities.tools.mcp_config import McpConfigError, McpServerConfig, McpStartError
from activities.tools.tool_loading import (
    AGENTS_ENV,
    MCP_CONFIG_ENV,
    TOOLS_ENV,
    ToolLoadError,
    build_agent_profiles,
    build_tool_registry,
    load_mcp_servers,
    option_values,
)
from activities.tools.tool_registry import ToolRegistry
from contracts import TASK_QUEUE
from contracts.whole_numbers import port_number
from hosting.connection import connect, temporal_address, temporal_namespace
from hosting.dev_server import DevServerError, ensure_dev_server
from hosting.metrics_server import MetricsServer, sdk_runtime
from hosting.plugin import DurableReactPlugin
from hosting.retention import keep_retention_schedule, retention_days
from hosting.warm_up import warm_up_in_background
from live.dev_channel import ensure_dev_channel, forget
from payloads.blob_store import BlobStoreError, shared_blob_store
from payloads.redaction import install_log_redaction
from settings.deployment import load_settings
from settings.env_values import SettingsError

METRICS_PORT_ENV = "REACT_WORKER_METRICS_PORT"
METRICS_HOST_ENV = "REACT_WORKER_METRICS_HOST"

STARTUP_ERRORS: tuple[type[Exception], ...] = (
    DevServerError,
    SettingsError,
    BlobStoreError,
    ToolLoadError,
    McpConfigError,
    McpStartError,
)


@asynccontextmanager
async def _mcp(servers: dict[str, McpServerConfig], registry: ToolRegistry) -> AsyncIterator[None]:
    """Connect the MCP servers (registering their tools) for the worker's lifetime, if any are configured."""
    if not servers:
        yield
        return
    from activities.tools.mcp_tools import mcp_tools  # imports the MCP client: only when it is needed

    async with mcp_tools(servers, registry):
        yield


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
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
        "--agents",
        action="append",
        metavar="MODULE[:ATTR]",
        help="import agent profiles (an AgentProfiles named `agents`, or ATTR) that runs may offer "
        f"as tools (repeatable; default ${AGENTS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--transformers",
        action="append",
        metavar="MODULE[:ATTR]",
        help="import request transformers (a RequestTransformers named `transformers`, or ATTR) that "
        f"configs may name (repeatable; default ${TRANSFORMERS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--mcp-config",
        action="append",
        metavar="FILE",
        help=f"a JSON file of MCP servers to use as tools (repeatable; default ${MCP_CONFIG_ENV})",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=_port_env(METRICS_PORT_ENV),
        metavar="N",
        help="serve Prometheus metrics (the worker's and the Temporal SDK's) at http://HOST:N/metrics "
        f"(default ${METRICS_PORT_ENV}; unset: none; docs/metrics.md)",
    )
    parser.add_argument(
        "--metrics-host",
        default=os.environ.get(METRICS_HOST_ENV, "127.0.0.1"),
        help=f"the address the metrics endpoint listens on (default ${METRICS_HOST_ENV}, else 127.0.0.1)",
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="run workflows in Temporal's sandbox: slower, polices workflow code at run time "
        "(default $REACT_WORKFLOW_SANDBOX, off)",
    )
    return parser


def _serves_bundled_model() -> bool:
    """Whether the runs of this worker's dev deployment default to the bundled model, and it is installed."""
    model = os.environ.get("REACT_MODEL", "").strip()
    return model in ("", BUNDLED_MODEL) and missing_install() is None


def _start_bundled_model() -> None:
    """Serve the bundled model on its default port (one already serving there is used)."""
    try:
        ensure_server(DEFAULT_API_BASE)
    except LocalModelError as error:
        logging.warning("the bundled local model did not start: %s", error)
        return
    logging.info("the bundled local model serves on %s", DEFAULT_API_BASE)


def _port_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    port = port_number(raw)
    if port is None:
        sys.exit(f"worker: {name} must be a port number (1-65535), not {raw!r}")
    return port


def main(description: str = __doc__ or "") -> None:
    """Run the worker until SIGINT/SIGTERM; a start-up problem is one line and exit status 1."""
    try:
        asyncio.run(serve(_parser(description).parse_args()))
    except STARTUP_ERRORS as err:
        sys.exit(f"worker: {err}")


async def serve(args: argparse.Namespace) -> None:
    """Check the setup, optionally start the dev server, and run the worker until interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_redaction()  # secrets echoed by providers never reach the log (the SDK logs tracebacks)

    # A model chosen by $REACT_MODEL without its key: one line now, not a failed run later.
    model_problem = await asyncio.to_thread(configured_model_problem)
    if model_problem:
        raise SystemExit(f"worker: {model_problem}")
    registry = build_tool_registry(option_values(args.tools, TOOLS_ENV))
    agents = build_agent_profiles(option_values(args.agents, AGENTS_ENV))
    transformers = build_transformers(option_values(args.transformers, TRANSFORMERS_ENV))
    mcp_servers = load_mcp_servers(option_values(args.mcp_config, MCP_CONFIG_ENV))
    settings = load_settings()
    keep_days = retention_days()
    store = shared_blob_store(settings.payload_store)
    if args.dev and _serves_bundled_model():
        # The CLI's default agent runs on the bundled model: it loads while the dev server and the
        # worker start, not at the first call (a thread: the start waits for the model's server).
        threading.Thread(target=_start_bundled_model, daemon=True).start()
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
    channel, redis = await asyncio.to_thread(ensure_dev_channel, args.address) if args.dev else (None, None)
    if channel is not None:
        logging.info("live channel %s beside the dev server (%s)", channel, "started" if redis else "found")
    sandboxed = args.sandbox or settings.workflow_sandbox
    metrics: MetricsServer | None = None
    try:
        plugin = DurableReactPlugin(
            settings=settings,
            store=store,
            registry=registry,
            agents=agents,
            transformers=transformers,
            sandboxed=sandboxed,
        )
        runtime: Runtime | None = None
        if args.metrics_port is not None:
            runtime, sdk_address = sdk_runtime()
            try:
                metrics = MetricsServer(args.metrics_host, args.metrics_port, sdk_address)
            except OSError as err:
                where = f"{args.metrics_host}:{args.metrics_port}"
                raise SystemExit(f"worker: cannot serve metrics on {where} ({err.strerror})") from None
            logging.info("metrics at http://%s:%d/metrics", args.metrics_host, metrics.port)
        try:
            # The client carries the plugin, so the worker built from it runs the agents.
            client = await connect(
                args.address, args.namespace, settings=settings, plugin=plugin, runtime=runtime
            )
        except RuntimeError as err:
            raise SystemExit(
                f"worker: cannot reach Temporal at {args.address} ({err}); "
                "start a server, or run `python worker.py --dev` for the embedded one"
            ) from err
        worker = Worker(client, task_queue=args.task_queue)
        retention = await keep_retention_schedule(client, args.task_queue, keep_days)
        logging.info("retention of idle threads: %s", retention)
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
        if plugin.activity_overrides:
            logging.info("activity option overrides: %s", dict(plugin.activity_overrides))
        # MCP servers connect (and register their tools) before polling starts, and close after it stops.
        async with _mcp(mcp_servers, registry), worker:
            logging.info(
                "worker polling task queue %r on %s (workflows %s)",
                args.task_queue,
                args.address,
                "in Temporal's sandbox" if sandboxed else "outside the sandbox",
            )
            # litellm takes seconds to import: load it now that polling has started, so
            # neither start-up nor the first LLM call waits for it (and then freeze start-up's objects).
            warm_up_in_background()
            await stop.wait()
    finally:
        if metrics is not None:
            metrics.close()
        await asyncio.to_thread(stop_started)  # the local model server, if this worker started one
        await store.aclose()
        if channel is not None:
            forget(args.address)
        if redis is not None:
            redis.terminate()
            with contextlib.suppress(Exception):
                redis.wait(timeout=10)
        if server is not None:
            server.terminate()
            with contextlib.suppress(Exception):
                server.wait(timeout=10)
