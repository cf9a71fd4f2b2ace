"""Connecting to Temporal with the project's data converter."""

from __future__ import annotations

import os

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


def temporal_address() -> str:
    """The server address: `TEMPORAL_ADDRESS`, else localhost:7233."""
    return os.environ.get("TEMPORAL_ADDRESS", DEFAULT_ADDRESS)


def temporal_namespace() -> str:
    """The namespace: `TEMPORAL_NAMESPACE`, else default."""
    return os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE)


async def connect(address: str | None = None, namespace: str | None = None) -> Client:
    """A client whose payloads are pydantic models rendered as JSON (readable in the Web UI)."""
    return await Client.connect(
        address or temporal_address(),
        namespace=namespace or temporal_namespace(),
        data_converter=pydantic_data_converter,
    )
