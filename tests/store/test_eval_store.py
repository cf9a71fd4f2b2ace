"""Evaluations' rows on both real databases (SQLite and PostgreSQL 15): `store.evals.EvalStore`.

An evaluation is created `running`, its cases are written (a case written again replaces its row:
a retried `score_eval_case`), its end recorded; it is read back, cases in order, by its maker only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from contracts.evals import CaseResult, CaseScore
from store import StoreInputError
from store.evals import EvalStore


@pytest_asyncio.fixture
async def evals(store_url: str) -> AsyncIterator[EvalStore]:
    opened = EvalStore(store_url)
    try:
        yield opened
    finally:
        await opened.close()


def case(index: int, passed: bool, output: str) -> CaseResult:
    return CaseResult(
        name=f"c{index}",
        index=index,
        passed=passed,
        output=output,
        scores=[CaseScore(evaluator="EqualsExpected", value=passed)],
        run_workflow_id=f"eval/e1/case-{index}",
        run_status="completed",
        cost_usd=0.25,
        duration_s=1.5,
    )


async def test_an_evaluation_is_kept_case_by_case_and_read_back_by_its_maker_only(evals: EvalStore) -> None:
    await evals.create("e1", "alice", "helper@2", "sums", 2)
    started = await evals.get("e1", "alice")
    assert started is not None
    assert (started.status, started.case_count, started.cases, started.finished_at) == (
        "running",
        2,
        [],
        None,
    )
    await evals.put_case("e1", case(1, False, "first try"))
    await evals.put_case("e1", case(1, True, "42"))  # a retried activity writes the row again
    await evals.put_case("e1", case(0, True, "7"))
    await evals.finish("e1", "completed", None)
    done = await evals.get("e1", "alice")
    assert done is not None
    assert (done.eval_id, done.principal, done.agent, done.dataset) == ("e1", "alice", "helper@2", "sums")
    assert (done.status, done.error) == ("completed", None)
    assert done.finished_at is not None and done.finished_at >= done.created_at
    assert done.cases == [case(0, True, "7"), case(1, True, "42")]
    assert await evals.get("e1", "bob") is None  # another principal's reads as a missing one
    assert await evals.get("e2", "alice") is None


async def test_a_failed_evaluation_keeps_its_reason(evals: EvalStore) -> None:
    await evals.create("e3", "alice", "helper", "sums", 1)
    await evals.finish("e3", "failed", "a case's scoring failed every attempt")
    failed = await evals.get("e3", "alice")
    assert failed is not None and (failed.status, failed.error) == (
        "failed",
        "a case's scoring failed every attempt",
    )


def test_a_store_url_of_another_scheme_is_refused_by_name() -> None:
    with pytest.raises(StoreInputError, match="REACT_STORE_URL must start with"):
        EvalStore("mysql://db/evals")
