"""`client.py eval run`: a dataset file evaluated as a user runs it (a separate `client.py` process).

The worker runs on the product's task queue in this process and shares the test store with the CLI
(`REACT_STORE_URL`); the agent is `tests.metrics_agents`' `default` (the calculator, then "2 + 3 is
5."). A dataset, an agent or a file the CLI cannot take is refused by name with exit 1 and no
evaluation started.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from clients.evals import eval_workflow_id
from contracts.evals import EvalResult
from tests.cli.test_cli_follow import cli
from tests.cli.test_cli_output import product_queue
from tests.metrics_agents import ANSWER

__all__ = ["product_queue"]

AGENTS = ("--agents", "tests.metrics_agents")


def _dataset(tmp_path: Path, cases: list[dict[str, Any]], evaluators: list[Any] | None = None) -> str:
    path = tmp_path / "dataset.json"
    path.write_text(
        json.dumps({"name": "sums", "cases": cases, "evaluators": evaluators or ["EqualsExpected"]}),
        encoding="utf-8",
    )
    return str(path)


async def test_eval_run_waits_and_prints_each_case_scored_then_show_reads_it_again(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    dataset = _dataset(
        tmp_path,
        [
            {"name": "right", "inputs": "What is 2 + 3?", "expected_output": ANSWER},
            {"name": "wrong", "inputs": "What is 2 + 4?", "expected_output": "6"},
        ],
    )
    ran = await cli(
        client, "eval", "run", dataset, "--agent", "default", *AGENTS, "--wait", "--concurrency", "2"
    )
    assert ran.code == 0, ran.err
    eval_id, _, printed = ran.out.partition("\n")
    view = json.loads(printed)
    assert (view["eval_id"], view["agent"], view["dataset"], view["status"]) == (
        eval_id,
        "default",
        "sums",
        "completed",
    )
    verdicts = {case["name"]: (case["passed"], case["output"], case["run_status"]) for case in view["cases"]}
    assert verdicts == {"right": (True, ANSWER, "completed"), "wrong": (False, ANSWER, "completed")}
    result = await client.get_workflow_handle(eval_workflow_id(eval_id), result_type=EvalResult).result()
    assert (result.passed, result.failed) == (1, 1)
    shown = await cli(client, "eval", "show", eval_id)
    assert shown.code == 0, shown.err
    assert json.loads(shown.out) == view
    others = await cli(client, "eval", "show", eval_id, "--principal", "bob")
    assert others.code == 1 and "not_found" in others.out


async def test_eval_run_without_wait_prints_the_id_of_a_started_evaluation(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    dataset = _dataset(tmp_path, [{"name": "right", "inputs": "What is 2 + 3?", "expected_output": ANSWER}])
    ran = await cli(client, "eval", "run", dataset, "--agent", "default", *AGENTS)
    assert ran.code == 0, ran.err
    eval_id = ran.out.strip()
    result = await client.get_workflow_handle(eval_workflow_id(eval_id), result_type=EvalResult).result()
    assert (result.passed, result.failed) == (1, 0)


@pytest.mark.parametrize(
    ("cases", "evaluators", "agent", "code"),
    [
        ([], None, "default", "invalid_dataset"),
        ([{"name": "x", "inputs": {"query": "q", "junk": 1}}], None, "default", "invalid_dataset"),
        ([{"name": "x", "inputs": "q"}], ["NoSuchEvaluator"], "default", "unknown_evaluator"),
        ([{"name": "x", "inputs": "q"}], None, "nobody", "unknown_agent"),
        (
            [{"name": "x", "inputs": {"query": "q", "attachments": ["file-nope"]}}],
            None,
            "default",
            "not_found",
        ),
    ],
)
async def test_eval_run_refuses_by_name_and_starts_nothing(
    client: Client,
    product_queue: str,
    tmp_path: Path,
    cases: list[dict[str, Any]],
    evaluators: list[Any] | None,
    agent: str,
    code: str,
) -> None:
    dataset = _dataset(tmp_path, cases, evaluators)
    since = datetime.now(UTC).isoformat()
    ran = await cli(client, "eval", "run", dataset, "--agent", agent, *AGENTS)
    assert ran.code == 1, ran.out + ran.err
    assert ran.out.startswith(f"refused ({code})") and ran.out.count("\n") == 1, ran.out  # no id printed
    assert "Traceback" not in ran.err
    started = client.list_workflows(f"WorkflowType = 'EvalRun' AND StartTime > '{since}'")
    assert [w.id async for w in started] == []


async def test_eval_run_of_a_file_that_is_not_there_is_refused(client: Client, tmp_path: Path) -> None:
    ran = await cli(client, "eval", "run", str(tmp_path / "missing.json"), "--agent", "default", *AGENTS)
    assert ran.code == 1 and "refused (invalid_dataset): cannot read" in ran.out, ran.out + ran.err
