"""Idempotency keys: a tool that declares `idempotency_key: str` gets one key per tool call.

Real worker, real runs: a tool makes its side effect and then fails on its first attempt
(as when a worker dies after the side effect); the retry must see the same key.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client

from activities.tools.tool_registry import ToolRegistry, default_registry
from examples.support_tools import issue_refund, refunds_for
from tests.mcp_servers.harness import activities_of, calls, start_agent, tool_messages
from worker import build_worker

side_effects: list[tuple[str, str]] = []
"""(label, idempotency key) of every side effect the tools below made, attempts included."""


def charge(label: str, idempotency_key: str) -> str:
    """Charge a card: the side effect happens, then the first attempt loses its response.

    Args:
        label: Names the charge.
        idempotency_key: Injected by the worker.
    """
    side_effects.append((label, idempotency_key))
    if sum(1 for seen, _ in side_effects if seen == label) == 1:
        raise ConnectionError(f"the response to charge {label} was lost")
    return f"charged {label}"


def refund_then_lose_response(order_id: str, amount_cents: int, idempotency_key: str) -> dict[str, Any]:
    """Refund through the example tool, then lose the response on the first attempt.

    Args:
        order_id: The order.
        amount_cents: How much.
        idempotency_key: Injected by the worker.
    """
    refund = issue_refund(order_id, amount_cents, "damaged", idempotency_key)
    side_effects.append((f"refund-{order_id}", idempotency_key))
    if sum(1 for label, _ in side_effects if label == f"refund-{order_id}") == 1:
        raise ConnectionError("the worker died after the refund")
    return refund


@pytest.fixture(scope="module", autouse=True)
def refunds_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("refunds") / "refunds.sqlite3"
    os.environ["SUPPORT_TOOLS_DB"] = str(path)
    yield path
    del os.environ["SUPPORT_TOOLS_DB"]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def queue(client: Client) -> AsyncIterator[str]:
    registry = default_registry()
    registry.register(charge)
    registry.register(refund_then_lose_response)
    name = f"react-idem-test-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue=name, registry=registry, max_cached_workflows=0):
        yield name


def expected_key(workflow_id: str, run_id: str, activity_id: str) -> str:
    return hashlib.sha256(f"{workflow_id}\x1f{run_id}\x1f{activity_id}".encode()).hexdigest()


async def test_a_retry_sees_the_same_key_and_other_calls_other_keys(client: Client, queue: str) -> None:
    a, b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    script = [calls(("charge", {"label": a}), ("charge", {"label": b})), {"content": "both charged"}]
    handle = await start_agent(client, queue, script, ["charge"], tool_max_retries=2)
    result = await handle.result()
    assert [m["result"] for m in tool_messages(result)] == [f"charged {a}", f"charged {b}"]
    keys_a = [key for label, key in side_effects if label == a]
    keys_b = [key for label, key in side_effects if label == b]
    assert len(keys_a) == 2 and len(set(keys_a)) == 1  # the side effect ran twice, with one key
    assert len(keys_b) == 2 and len(set(keys_b)) == 1
    assert keys_a[0] != keys_b[0]
    run_id = (await handle.describe()).run_id
    activities = await activities_of(handle, "run_tool")
    assert [a["attempt"] for a in activities] == [2, 2]
    assert [keys_a[0], keys_b[0]] == [expected_key(handle.id, run_id, a["activity_id"]) for a in activities]

    # The same call in another run gets another key.
    again = await start_agent(client, queue, script, ["charge"], tool_max_retries=2)
    await again.result()
    (later,) = [key for label, key in side_effects if label == a][2:]  # no failure this time
    assert later != keys_a[0]


async def test_the_key_deduplicates_a_side_effect_that_is_retried(client: Client, queue: str) -> None:
    script = [
        calls(("refund_then_lose_response", {"order_id": "A-1001", "amount_cents": 500})),
        {"content": "ok"},
    ]
    handle = await start_agent(client, queue, script, ["refund_then_lose_response"], tool_max_retries=1)
    result = await handle.result()
    (message,) = tool_messages(result)
    assert message["ok"] is True
    (refund,) = refunds_for("A-1001")  # two attempts, one refund
    assert message["result"] == {"refund_id": refund[0], "order_id": "A-1001", "amount_cents": 500}


async def test_the_model_never_sees_or_sets_the_key(client: Client, queue: str) -> None:
    script = [calls(("charge", {"label": "x", "idempotency_key": "mine"})), {"content": "."}]
    handle = await start_agent(client, queue, script, ["charge"])
    result = await handle.result()
    (message,) = tool_messages(result)
    assert message["error"]["type"] == "invalid_arguments"
    assert "idempotency_key" in message["error"]["message"]
    assert not any(key == "mine" for _, key in side_effects)
    registry = ToolRegistry()
    registry.register(charge)
    # The schema the LLM activity sends the model for `charge`: no idempotency_key in it.
    assert registry.spec("charge").parameters["properties"] == {
        "label": {"type": "string", "description": "Names the charge."}
    }


async def test_registration_and_direct_calls() -> None:
    registry = ToolRegistry()

    def wrong(idempotency_key: int) -> int:
        """Declares the key with the wrong type."""
        return idempotency_key

    with pytest.raises(TypeError, match="`idempotency_key` must be annotated `str`"):
        registry.register(wrong)

    def key(idempotency_key: str) -> str:
        """Return the key."""
        return idempotency_key

    registry.register(key)
    # Outside an activity there are no retries: each call gets a fresh key unless one is given.
    first, second = await registry.call("key", {}), await registry.call("key", {})
    assert len(first) == 32 and first != second
    assert await registry.call("key", {}, idempotency_key="given") == "given"
