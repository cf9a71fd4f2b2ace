"""Connecting to Temporal the product's way: its plugin, TLS and API key from the environment.

Every client the product builds (the worker, `client.py`, the Python API, the tests)
carries `hosting.plugin.DurableReactPlugin` (or its `build_data_converter`), so they all
read and write payloads alike: pydantic models as JSON (readable in the Web UI),
optionally encrypted (`REACT_ENCRYPTION_KEYS`), and claim-checked into the payload store
once they reach `REACT_PAYLOAD_THRESHOLD` (`REACT_PAYLOAD_STORE`). See `settings.deployment`
for the variables. A worker built from a client of `connect()` gets the agents too
(`Worker(client, task_queue=...)`), unless it brings a `DurableReactPlugin` of its own.
The plugin also traces the client's calls and its workers when the `OTEL_*` variables turn
tracing on (`hosting.tracing`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from temporalio.client import Client

from payloads.blob_store import BlobStore
from settings.deployment import Settings, load_settings

if TYPE_CHECKING:
    from temporalio.runtime import Runtime

    from hosting.plugin import DurableReactPlugin

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "connect",
    "temporal_address",
    "temporal_namespace",
]


def temporal_address() -> str:
    """The server address: `TEMPORAL_ADDRESS`, else localhost:7233."""
    return os.environ.get("TEMPORAL_ADDRESS", DEFAULT_ADDRESS)


def temporal_namespace() -> str:
    """The namespace: `TEMPORAL_NAMESPACE`, else default."""
    return os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE)


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    settings: Settings | None = None,
    store: BlobStore | None = None,
    plugin: DurableReactPlugin | None = None,
    runtime: Runtime | None = None,
) -> Client:
    """A client with the product's plugin (data converter), TLS and API key.

    Args:
        address: host:port (default `TEMPORAL_ADDRESS`, else localhost:7233).
        namespace: the namespace (default `TEMPORAL_NAMESPACE`, else default).
        settings: the deployment settings (default: from the environment).
        store: the payload store (default: the one `settings` names).
        plugin: the client's plugin (default: `DurableReactPlugin(settings=settings, store=store)`);
            workers built from the client run the agents with its registry and options.
        runtime: the Temporal runtime (default: the SDK's); the worker's exports the SDK's
            metrics (`hosting.metrics_server.sdk_runtime`).

    Raises:
        SettingsError: a variable has a value that cannot be used (checked before connecting).
        RuntimeError: the server cannot be reached or refuses the connection.
    """
    from hosting.plugin import DurableReactPlugin  # loads temporalio.worker: only when connecting

    settings = settings or (plugin.settings if plugin else load_settings())
    return await Client.connect(
        address or temporal_address(),
        namespace=namespace or temporal_namespace(),
        plugins=[plugin or DurableReactPlugin(settings=settings, store=store)],
        tls=settings.tls,
        api_key=settings.api_key,
        runtime=runtime,
    )
