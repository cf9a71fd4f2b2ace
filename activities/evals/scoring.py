"""The evaluation activities: `score_eval_case` (a case's evaluators, its row in the store) and `finish_eval`.

`score_eval_case` reads the case's own dataset text with pydantic-evals, builds the
`EvaluatorContext` of the child run's output (its inputs, expected output and metadata from the
case, the run's duration, its tool calls as the attribute `tool_calls`, its cost and tokens as
metrics) and runs each evaluator (the dataset's, then the case's) with pydantic-evals'
`run_evaluator`. An `LLMJudge` is given its model through the product's litellm path
(`activities.evals.judge`). A case passes when its run completed and every assertion (a bool
score) is true and no evaluator failed. The scored case is written to the store (an upsert) before
the activity answers, so a retried activity writes the same row. It heartbeats (an LLM judge may
take minutes), so a case whose worker died is retried on another within the heartbeat timeout,
not after the five-minute start-to-close timeout.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic_evals import Dataset
from pydantic_evals.evaluators import EvaluationResult, EvaluatorContext, LLMJudge
from pydantic_evals.evaluators._run_evaluator import run_evaluator  # pyright: ignore[reportPrivateUsage]
from pydantic_evals.otel._errors import SpanTreeRecordingError  # pyright: ignore[reportPrivateUsage]
from temporalio import activity

from activities._heartbeat import with_heartbeat
from activities.evals.evaluators import CUSTOM_EVALUATORS
from activities.evals.judge import judge_model
from contracts.activities import FINISH_EVAL_ACTIVITY, SCORE_EVAL_CASE_ACTIVITY
from contracts.evals import CaseResult, CaseRun, CaseScore, EvalFinish
from store.evals import EvalStore


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


class EvalActivities:
    """The evaluation activities, on the store `url` names (default `REACT_STORE_URL`)."""

    def __init__(self, url: str | None = None) -> None:
        """Bind the store's URL; nothing opens yet."""
        self._url = url
        self._store: EvalStore | None = None

    def _evals(self) -> EvalStore:
        if self._store is None:
            self._store = EvalStore(self._url)
        return self._store

    @activity.defn(name=SCORE_EVAL_CASE_ACTIVITY)
    async def score_eval_case(self, run: CaseRun) -> CaseResult:
        """Score the case and write it to the store."""
        result = await with_heartbeat(score(run))
        await with_heartbeat(self._evals().put_case(run.eval_id, result))
        return result

    @activity.defn(name=FINISH_EVAL_ACTIVITY)
    async def finish_eval(self, finish: EvalFinish) -> EvalFinish:
        """Record the evaluation's end."""
        await self._evals().finish(finish.eval_id, finish.status, finish.error)
        return finish
