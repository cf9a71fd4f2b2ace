"""Evaluations on the typed client: start an `EvalRun`, read it back from the store, compare two.

    evals = Evals(client)                             # the store: REACT_STORE_URL
    eval_id = await evals.start(principal, "support@2", read.name, config, read.cases)
    view = await evals.show(eval_id, principal)       # {"status", "cases", "summary"} or None
    diff = compare(view_a, view_b)                    # per case, per evaluator, cost, latency

Reading the dataset (pydantic-evals) is the caller's (`activities.evals.datasets.read_dataset`),
before anything is created. `start` records the evaluation (`running`) in the store, then starts
its workflow (`eval-<eval_id>`); the worker writes each scored case and the end. An evaluation is
its maker's: `show` of another principal's is None, as of a missing one.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client

from contracts import TASK_QUEUE
from contracts.agent import AgentConfig
from contracts.evals import DEFAULT_EVAL_CONCURRENCY, EVAL_WORKFLOW_TYPE, EvalCase, EvalInput, EvalResult
from store.evals import EvalRecord, EvalStore


def eval_workflow_id(eval_id: str) -> str:
    """The workflow id of an evaluation."""
    return f"eval-{eval_id}"


def summary_of(record: EvalRecord) -> dict[str, Any]:
    """`{"passed", "failed", "pending", "pass_rate", "by_evaluator", "cost_usd", "latency_s_p50", ...}`."""
    cases = record.cases
    passed = sum(1 for c in cases if c.passed)
    by_evaluator: dict[str, dict[str, int]] = {}
    for case in cases:
        for s in case.scores:
            if isinstance(s.value, bool) or s.error is not None:
                row = by_evaluator.setdefault(s.evaluator, {"passed": 0, "failed": 0})
                row["passed" if s.value is True and s.error is None else "failed"] += 1
    latencies = sorted(c.duration_s for c in cases)
    return {
        "passed": passed,
        "failed": len(cases) - passed,
        "pending": record.case_count - len(cases),
        "cases": record.case_count,
        "pass_rate": passed / len(cases) if cases else None,
        "by_evaluator": {
            name: {**row, "pass_rate": row["passed"] / (row["passed"] + row["failed"])}
            for name, row in sorted(by_evaluator.items())
        },
        "cost_usd": sum(c.cost_usd for c in cases),
        "latency_s_p50": statistics.median(latencies) if latencies else None,
        "latency_s_max": latencies[-1] if latencies else None,
    }


def view_of(record: EvalRecord) -> dict[str, Any]:
    """An evaluation as `GET /api/evals/{id}` answers it."""
    body: dict[str, Any] = {
        "eval_id": record.eval_id,
        "agent": record.agent,
        "dataset": record.dataset,
        "status": record.status,
        "cases": [
            {
                "name": c.name,
                "passed": c.passed,
                "output": c.output,
                "scores": {s.evaluator: s.value if s.error is None else {"error": s.error} for s in c.scores},
                "reasons": {s.evaluator: s.reason for s in c.scores if s.reason},
                "run_status": c.run_status,
                "run_workflow_id": c.run_workflow_id,
                "cost_usd": c.cost_usd,
                "duration_s": c.duration_s,
            }
            for c in record.cases
        ],
        "summary": summary_of(record),
    }
    if record.error:
        body["error"] = record.error
    return body


def compare(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two evaluations' views side by side: the cases whose verdict or output differ, each summary's rates."""
    by_name = {c["name"]: c for c in second["cases"]}
    differences: list[dict[str, Any]] = []
    for case in first["cases"]:
        other = by_name.get(case["name"])
        if other is None:
            differences.append({"name": case["name"], "only_in": first["eval_id"]})
            continue
        changed = {
            name: {"a": case["scores"].get(name), "b": other["scores"].get(name)}
            for name in sorted(set(case["scores"]) | set(other["scores"]))
            if case["scores"].get(name) != other["scores"].get(name)
        }
        if changed or case["passed"] != other["passed"] or case["output"] != other["output"]:
            differences.append(
                {
                    "name": case["name"],
                    "passed": {"a": case["passed"], "b": other["passed"]},
                    "output": {"a": case["output"], "b": other["output"]},
                    "scores": changed,
                }
            )
    names = {c["name"] for c in first["cases"]}
    differences += [{"name": n, "only_in": second["eval_id"]} for n in by_name if n not in names]

    def side(view: dict[str, Any]) -> dict[str, Any]:
        s = view["summary"]
        return {
            "eval_id": view["eval_id"],
            "agent": view["agent"],
            "status": view["status"],
            "pass_rate": s["pass_rate"],
            "by_evaluator": {k: v["pass_rate"] for k, v in s["by_evaluator"].items()},
            "cost_usd": s["cost_usd"],
            "latency_s_p50": s["latency_s_p50"],
            "latency_s_max": s["latency_s_max"],
        }

    return {"a": side(first), "b": side(second), "differences": differences}


class Evals:
    """Evaluations over a Temporal client and the store."""

    def __init__(self, client: Client, *, task_queue: str = TASK_QUEUE, store_url: str | None = None) -> None:
        """Bind the client, the task queue the workers poll and the store (default `REACT_STORE_URL`)."""
        self._client = client
        self._task_queue = task_queue
        self._store = EvalStore(store_url)

    async def start(
        self,
        principal: str,
        agent: str,
        dataset_name: str,
        config: AgentConfig,
        cases: Sequence[EvalCase],
        *,
        concurrency: int = DEFAULT_EVAL_CONCURRENCY,
    ) -> str:
        """Record and start an evaluation of `agent` (resolved to `config`) on `cases`; its id.

        Raises:
            pydantic.ValidationError: too many cases or a concurrency out of range (nothing created).
            StoreUnavailableError: the store did not answer (nothing started).
        """
        eval_id = f"ev-{uuid.uuid4().hex[:16]}"
        spec = EvalInput(
            eval_id=eval_id,
            principal=principal,
            agent=agent,
            dataset_name=dataset_name,
            config=config,
            cases=list(cases),
            concurrency=concurrency,
        )
        await self._store.create(eval_id, principal, agent, dataset_name, len(spec.cases))
        await self._client.start_workflow(
            EVAL_WORKFLOW_TYPE,
            spec,
            id=eval_workflow_id(eval_id),
            task_queue=self._task_queue,
            result_type=EvalResult,
            static_summary=f"eval {agent} on {dataset_name} ({len(spec.cases)} cases)"[:200],
        )
        return eval_id

    async def show(self, eval_id: str, principal: str) -> dict[str, Any] | None:
        """The evaluation's view (status, scored cases, summary), or None (missing, or another's)."""
        record = await self._store.get(eval_id, principal)
        return None if record is None else view_of(record)

    async def wait(self, eval_id: str) -> EvalResult:
        """The evaluation's result once its workflow ends."""
        result: EvalResult = await self._client.get_workflow_handle(
            eval_workflow_id(eval_id), result_type=EvalResult
        ).result()
        return result

    async def close(self) -> None:
        """Close the store."""
        await self._store.close()
