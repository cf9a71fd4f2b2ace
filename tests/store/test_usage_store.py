"""Usage rows on both real databases (SQLite and PostgreSQL 15), and the `record_usage` activity.

A row is written once per (session, request); a report groups the rows of its days and gives
sums and nearest-rank percentiles; bad report input is refused by name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import ActivityEnvironment

from activities.memory.memory_activities import MemoryActivities
from activities.memory.usage_activities import UsageActivities
from contracts.usage import UsageRecord
from store import MemoryStore, StoreInputError
from store.memory_store import backend_for
from store.usage import USAGE_SCHEMA_VERSION, everyone, percentile, report_query

TODAY = date(2026, 12, 2)


@pytest_asyncio.fixture
async def store(store_url: str) -> AsyncIterator[MemoryStore]:
    opened = MemoryStore(backend_for(store_url))
    assert USAGE_SCHEMA_VERSION in await opened.migrate()
    try:
        yield opened
    finally:
        await opened.close()


def record(request_id: str, **fields: Any) -> UsageRecord:
    values: dict[str, Any] = {
        "session_id": "gw/alice/helper/t1",
        "request_id": request_id,
        "principal": "alice",
        "agent": "helper",
        "status": "completed",
        "day": "2026-12-01",
        "ended_at": 1_800_000_000.0,
        "latency_ms": 100,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.25,
    }
    return UsageRecord.model_validate({**values, **fields})


async def test_a_request_is_written_once_and_reported_by_group(store: MemoryStore) -> None:
    assert await store.usage.record(record("r1", latency_ms=100))
    assert not await store.usage.record(record("r1", latency_ms=999, prompt_tokens=1_000))  # a retry
    await store.usage.record(record("r2", latency_ms=300, status="failed", prompt_tokens=1, cost_usd=0.0))
    await store.usage.record(record("r3", latency_ms=200, version=2))
    await store.usage.record(
        record("r1", session_id="gw/alice/helper/t2", day="2026-12-02")
    )  # another thread
    await store.usage.record(record("r9", session_id="gw/bob/helper/t1", principal="bob"))

    query = report_query("2026-12-01", "2026-12-02", "agent,version,day", today=TODAY)
    rows = [row.shown(query.group_by) for row in await store.usage.report(query, "alice")]
    assert rows == [
        {
            "agent": "helper",
            "version": None,
            "day": "2026-12-01",
            "requests": 2,
            "failed": 1,
            "prompt_tokens": 11,
            "completion_tokens": 10,
            "cost_usd": 0.25,
            "latency_ms_p50": 100,
            "latency_ms_p99": 300,
        },
        {
            "agent": "helper",
            "version": None,
            "day": "2026-12-02",
            "requests": 1,
            "failed": 0,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "cost_usd": 0.25,
            "latency_ms_p50": 100,
            "latency_ms_p99": 100,
        },
        {
            "agent": "helper",
            "version": 2,
            "day": "2026-12-01",
            "requests": 1,
            "failed": 0,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "cost_usd": 0.25,
            "latency_ms_p50": 200,
            "latency_ms_p99": 200,
        },
    ]
    all_of_them = everyone(report_query("2026-12-01", "2026-12-02", "agent", today=TODAY))
    by_principal = {row.principal: row.requests for row in await store.usage.report(all_of_them, None)}
    assert by_principal == {"alice": 4, "bob": 1}
    only_first_day = report_query("2026-12-02", "2026-12-02", "day", today=TODAY)
    assert [r.requests for r in await store.usage.report(only_first_day, "alice")] == [1]
    assert await store.usage.prune(date(2026, 12, 2)) == 4
    assert [r.requests for r in await store.usage.report(all_of_them, None)] == [1]


async def test_the_activity_twice_with_one_request_id_writes_once(store_url: str) -> None:
    memory = MemoryActivities(store_url)
    activities = UsageActivities(memory)
    environment = ActivityEnvironment()
    try:
        first = await environment.run(activities.record_usage, record("r1"))
        again = await environment.run(activities.record_usage, record("r1", prompt_tokens=7))
        assert (first.written, again.written) == (True, False)
        store = await memory.store()
        rows = await store.usage.report(report_query("2026-12-01", "2026-12-01", "agent", today=TODAY), None)
        assert [(r.requests, r.prompt_tokens) for r in rows] == [(1, 10)]
    finally:
        await memory.close()


def test_percentiles_are_nearest_rank() -> None:
    ordered = list(range(1, 101))
    assert (percentile(ordered, 0.5), percentile(ordered, 0.99), percentile([7], 0.99)) == (50, 99, 7)
    assert percentile([1, 2], 0.5) == 1


@pytest.mark.parametrize(
    ("start", "end", "group_by", "named"),
    [
        ("2026-12-1", None, None, "from must be a day"),
        ("yesterday", None, None, "from must be a day"),
        (None, "2026-02-30", None, "to must be a day"),
        ("2026-12-02", "2026-12-01", None, "must not be after to"),
        ("2024-01-01", "2026-12-01", None, "the limit is 366"),
        (None, None, "agent,model", "group_by key 'model' is unknown"),
        (None, None, "", "group_by key '' is unknown"),
        (None, None, "day,day", "names a key twice"),
    ],
)
def test_bad_report_input_is_refused_by_name(
    start: str | None, end: str | None, group_by: str | None, named: str
) -> None:
    with pytest.raises(StoreInputError) as refused:
        report_query(start, end, group_by, today=TODAY)
    assert refused.value.code == "invalid_input"
    assert named in refused.value.message


def test_the_defaults_are_thirty_days_up_to_today_by_agent_version_day() -> None:
    query = report_query(today=TODAY)
    assert (query.start, query.end, query.group_by) == (date(2026, 11, 3), TODAY, ("agent", "version", "day"))
