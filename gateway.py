"""The HTTP gateway: AG-UI over resumable SSE, the chat page, A2A and MCP, on the typed client.

    python gateway.py                                  # 127.0.0.1:8400, TEMPORAL_ADDRESS, the default agent
    python gateway.py --agents mypackage.agents        # the named agents clients may use (`default` too)
    REACT_GATEWAY_TOKENS=s3cret=alice python gateway.py --host 0.0.0.0   # tokens: needed off loopback

The gateway is stateless: sessions hold every conversation, so any number of gateways may serve
them, and a restarted one serves everything again. See docs/gateway.md (endpoints, tokens, CORS,
pointing an AG-UI front end at it) and `gateway.settings` for the environment variables.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

import uvicorn

from activities.tools.tool_loading import AGENTS_ENV, ToolLoadError
from gateway.app import build_app
from gateway.context import build_context
from gateway.server.connections import ConnectionLimits, connection_budget, guarded_h11, raise_open_file_limit
from gateway.server.log_rate import rate_limit_logs
from gateway.settings import load_settings
from hosting.connection import connect, temporal_address, temporal_namespace
from settings.env_values import SettingsError


def parser() -> argparse.ArgumentParser:
    """The command line of `python gateway.py`."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8400, help="port to listen on (default 8400)")
    parser.add_argument(
        "--agents",
        action="append",
        metavar="MODULE[:ATTR]",
        help="the agent profiles clients may use (an AgentProfiles named `agents`, or ATTR; repeatable; "
        f"default ${AGENTS_ENV}); `default` is the deployment's default agent unless a profile has that name",
    )
    parser.add_argument("--address", default=temporal_address(), help="Temporal frontend (host:port)")
    parser.add_argument("--namespace", default=temporal_namespace())
    parser.add_argument("--task-queue", default=os.environ.get("REACT_TASK_QUEUE") or None)
    parser.add_argument("--log-level", default="info")
    return parser


async def serve(args: argparse.Namespace) -> None:
    """Load the settings, connect, and serve until interrupted."""
    settings = load_settings(
        host=args.host, port=args.port, agent_specs=args.agents or (), task_queue=args.task_queue
    )
    client = await connect(args.address, args.namespace)
    app = build_app(build_context(settings, client))
    open_files = raise_open_file_limit()
    limits = ConnectionLimits(
        header_timeout_s=settings.header_timeout_s,
        max_connections=connection_budget(settings.max_connections, open_files),
    )
    # No `limit_concurrency`: `guarded_h11` bounds the connections itself, closing idle ones first, so
    # a health check gets through a flood of idle connections (uvicorn's limit would refuse it too).
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=5,
        http=guarded_h11(limits),
        timeout_keep_alive=settings.keepalive_s,
    )
    rate_limit_logs()  # after uvicorn's Config, which sets up its loggers' handlers
    logging.getLogger("gateway").info(
        "gateway on http://%s:%s (at most %d connections; %d open files)",
        settings.host,
        settings.port,
        limits.max_connections,
        open_files,
    )
    await uvicorn.Server(config).serve()


def main() -> None:
    """Run the gateway; a setup problem is one line and exit status 1."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(parser().parse_args()))
    except (ToolLoadError, SettingsError, RuntimeError) as err:
        sys.exit(f"gateway: {err}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
