"""A case's evaluators over its run's output, with pydantic-evals (`score`; nothing written).

`score` reads the case's own dataset text with pydantic-evals, builds the `EvaluatorContext` of
the child run's output (its inputs, expected output and metadata from the case, the run's
duration, its tool calls as the attribute `tool_calls`, its cost and tokens as metrics) and runs
each evaluator (the dataset's, then the case's) with pydantic-evals' `run_evaluator`. An
`LLMJudge` is given its model through the product's litellm path (`activities.evals.judge`). A
case passes when its run completed and every assertion (a bool score) is true and no evaluator
failed.

pydantic-evals (and pydantic-ai under it) takes seconds to import: `activities.evals.scoring`
imports this module in a thread at a worker's first case, never at start-up.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic_evals import Dataset
from pydantic_evals.evaluators import EvaluationResult, EvaluatorContext, LLMJudge
from pydantic_evals.evaluators._run_evaluator import run_evaluator  # pyright: ignore[reportPrivateUsage]
from pydantic_evals.otel._errors import SpanTreeRecordingError  # pyright: ignore[reportPrivateUsage]

from activities.evals.evaluators import CUSTOM_EVALUATORS
from activities.evals.judge import judge_model
from contracts.evals import CaseResult, CaseRun, CaseScore


async def score(run: CaseRun) -> CaseResult:
    """The case's evaluators over the run's output (nothing written)."""
    dataset = Dataset[Any, Any, Any].from_text(
        run.case.dataset, fmt="json", custom_evaluator_types=CUSTOM_EVALUATORS
    )
    case = dataset.cases[0]
    ctx = EvaluatorContext[Any, Any, Any](
        name=case.name,
        inputs=case.inputs,
        metadata=case.metadata,
        expected_output=case.expected_output,
        output=run.output,
        duration=run.duration_s,
        _span_tree=SpanTreeRecordingError("an evaluation's case is a durable run, not a traced task"),
        attributes={"tool_calls": run.tool_calls, "run_status": run.status},
        metrics={
            "cost_usd": run.usage.cost_usd,
            "prompt_tokens": run.usage.prompt_tokens,
            "completion_tokens": run.usage.completion_tokens,
        },
    )
    scores: list[CaseScore] = []
    for evaluator in [*dataset.evaluators, *case.evaluators]:
        if isinstance(evaluator, LLMJudge) and isinstance(evaluator.model, str):
            evaluator = dataclasses.replace(evaluator, model=judge_model(evaluator.model))
        outcome = await run_evaluator(evaluator, ctx)
        if isinstance(outcome, list):
            scores.extend(_score(result) for result in outcome)
        else:
            scores.append(CaseScore(evaluator=outcome.name, error=outcome.error_message))
    passed = run.status == "completed" and all(
        s.error is None and (not isinstance(s.value, bool) or s.value) for s in scores
    )
    return CaseResult(
        name=run.case.name,
        index=run.index,
        passed=passed,
        output=run.output if run.status == "completed" else run.error,
        scores=scores,
        run_workflow_id=run.run_workflow_id,
        run_status=run.status,
        cost_usd=run.usage.cost_usd,
        duration_s=run.duration_s,
    )


def _score(result: EvaluationResult[Any]) -> CaseScore:
    value: Any = result.value
    return CaseScore(evaluator=result.name, value=value, reason=result.reason)
