"""Agent versions in the store, on both real databases: SQLite (a file) and PostgreSQL 15 (a real server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from contracts.errors import AGENT_EXISTS, INVALID_INPUT, UNKNOWN_AGENT, UNKNOWN_VERSION
from store import StoreInputError
from store.agent_versions import AgentVersions, open_versions
from store.memory_store import backend_for

CONFIG = {"model": "scripted", "system_prompt": "You are v1."}


@pytest_asyncio.fixture
async def versions(store_url: str) -> AsyncIterator[AgentVersions]:
    backend = backend_for(store_url)
    try:
        yield await open_versions(backend)
    finally:
        await backend.close()


async def test_migration_3_is_applied_once_beside_the_memory_schema(store_url: str) -> None:
    first = backend_for(store_url)
    applied = await first.migrate()
    assert 1 in applied and 3 in applied
    await AgentVersions(first).create("helper", CONFIG, created_by="alice")
    second = backend_for(store_url)
    assert await second.migrate() == applied
    record = await AgentVersions(second).get("helper")
    assert record is not None and record.latest == 1
    await first.close()
    await second.close()


async def test_create_publish_roll_back(versions: AgentVersions) -> None:
    assert await versions.create("helper", CONFIG, created_by="alice", note="first") == 1
    v2 = {**CONFIG, "system_prompt": "You are v2."}
    assert await versions.publish("helper", v2, created_by="bob", note="new prompt") == 2
    latest = await versions.resolve("helper")
    assert latest is not None and (latest.version, latest.config.system_prompt) == (2, "You are v2.")
    pinned = await versions.resolve("helper", 1)
    assert pinned is not None and pinned.config.system_prompt == "You are v1."
    assert await versions.set_latest("helper", 1) == 1
    rolled = await versions.resolve("helper")
    assert rolled is not None and (rolled.version, rolled.config.system_prompt) == (1, "You are v1.")
    record = await versions.get("helper")
    assert record is not None
    assert record.latest == 1
    assert [(v.version, v.note, v.created_by) for v in record.versions] == [
        (1, "first", "alice"),
        (2, "new prompt", "bob"),
    ]
    assert await versions.names() == [("helper", 1)]
    assert await versions.resolve("nobody") is None


async def test_concurrent_publishers_get_distinct_numbers(versions: AgentVersions) -> None:
    await versions.create("helper", CONFIG, created_by="alice")
    numbers = await asyncio.gather(
        *(versions.publish("helper", {**CONFIG, "system_prompt": f"p{i}"}, created_by="a") for i in range(8))
    )
    assert sorted(numbers) == list(range(2, 10))
    record = await versions.get("helper")
    assert record is not None and record.latest == max(numbers) and len(record.versions) == 9


@pytest.mark.parametrize(
    ("call", "code", "named"),
    [
        ("misspelt", INVALID_INPUT, "system_promt"),
        ("nested", INVALID_INPUT, "tempreature"),
        ("bad_value", INVALID_INPUT, "max_iterations"),
        ("bad_name", INVALID_INPUT, "^[A-Za-z0-9_-]{1,32}$"),
        ("newline_name", INVALID_INPUT, "^[A-Za-z0-9_-]{1,32}$"),
        ("exists", AGENT_EXISTS, "helper"),
        ("publish_unknown", UNKNOWN_AGENT, "ghost"),
        ("latest_unknown_version", UNKNOWN_VERSION, "no version 7"),
        ("resolve_unknown_version", UNKNOWN_VERSION, "no version 7"),
        ("latest_not_a_number", INVALID_INPUT, "version must be an integer"),
    ],
)
async def test_bad_input_is_refused_by_name_and_changes_nothing(
    versions: AgentVersions, call: str, code: str, named: str
) -> None:
    await versions.create("helper", CONFIG, created_by="alice")
    calls = {
        "misspelt": lambda: versions.publish("helper", {"model": "m", "system_promt": "x"}, created_by="a"),
        "nested": lambda: versions.publish(
            "helper", {"model": "m", "model_settings": {"tempreature": 1}}, created_by="a"
        ),
        "bad_value": lambda: versions.publish("helper", {"model": "m", "max_iterations": 0}, created_by="a"),
        "bad_name": lambda: versions.create("has space", CONFIG, created_by="a"),
        "newline_name": lambda: versions.create("helper2\n", CONFIG, created_by="a"),
        "exists": lambda: versions.create("helper", CONFIG, created_by="a"),
        "publish_unknown": lambda: versions.publish("ghost", CONFIG, created_by="a"),
        "latest_unknown_version": lambda: versions.set_latest("helper", 7),
        "resolve_unknown_version": lambda: versions.resolve("helper", 7),
        "latest_not_a_number": lambda: versions.set_latest("helper", "2"),
    }
    with pytest.raises(StoreInputError) as refused:
        await calls[call]()
    assert refused.value.code == code
    assert named in refused.value.message
    record = await versions.get("helper")
    assert record is not None and record.latest == 1 and len(record.versions) == 1
    assert await versions.names() == [("helper", 1)]
