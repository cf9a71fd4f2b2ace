"""The `EvalRun` workflow: each case of a dataset as a child `ReActRun`, at most `concurrency` at once.

Each case runs as a real durable run (the agent's config, the case's query and recorded tool
results) on any worker of the task queue; its output, tool calls, usage and duration go to the
`score_eval_case` activity, which runs the case's pydantic-evals evaluators and writes the
scored case to the store. The workflow keeps only the counts, so its history is about 6 events
per case (`contracts.evals.MAX_EVAL_CASES` cases fit far under Temporal's limit) and its state
small. A worker killed mid-evaluation loses nothing: the children, the activities and this
workflow are durable. `finish_eval` records the end (`completed`, or `failed` with the reason).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

from contracts import WORKFLOW_TYPE, RunInput, RunResult
from contracts.activities import FINISH_EVAL, SCORE_EVAL_CASE
from contracts.decoding import PayloadProblem, decode_args
from contracts.errors import EVAL_FAILED
from contracts.evals import EVAL_WORKFLOW_TYPE, CaseRun, EvalCase, EvalFinish, EvalInput, EvalResult
from contracts.llm import Usage
from contracts.workflow_ids import bounded_id
from conversation import MessageEntry
from workflows.activity_calls import call_activity
from workflows.refusals import refusal


def case_run(
    spec: EvalInput, index: int, case: EvalCase, child_id: str, result: RunResult, took: float
) -> CaseRun:
    """What the scorer reads of a finished child run."""
    calls: list[dict[str, Any]] = []
    for entry in result.entries:
        if isinstance(entry, MessageEntry) and entry.payload.tool_calls:
            calls.extend({"name": c.name, "arguments": c.arguments} for c in entry.payload.tool_calls)
    outcome = result.outcome
    return CaseRun(
        eval_id=spec.eval_id,
        index=index,
        case=case,
        run_workflow_id=child_id,
        status=outcome.status,
        answer=result.answer,
        output=result.output if result.output is not None else result.answer,
        error=outcome.error.message if outcome.error else None,
        tool_calls=calls,
        usage=outcome.usage,
        duration_s=took,
    )


def _seconds(since: datetime) -> float:
    return (workflow.now() - since).total_seconds()


@workflow.defn(name=EVAL_WORKFLOW_TYPE)
class EvalRun:
    """One evaluation: its cases as child runs, each scored and stored."""

    def __init__(self) -> None:
        """No case scored yet."""
        self._passed = 0
        self._failed = 0

    @workflow.run
    async def run(self, *args: Any) -> EvalResult:
        """Run and score every case; the counts (the cases are in the store)."""
        try:
            spec = decode_args(args, EvalInput, "the evaluation's input", required=True)
        except PayloadProblem as problem:
            raise refusal(problem) from None
        try:
            slots = asyncio.Semaphore(spec.concurrency)
            await asyncio.gather(*(self._case(spec, i, case, slots) for i, case in enumerate(spec.cases)))
        except Exception as exc:
            await call_activity(
                FINISH_EVAL, EvalFinish(eval_id=spec.eval_id, status="failed", error=str(exc))
            )
            raise ApplicationError(
                f"the evaluation failed: {exc}", type=EVAL_FAILED, non_retryable=True
            ) from None
        await call_activity(FINISH_EVAL, EvalFinish(eval_id=spec.eval_id, status="completed"))
        return EvalResult(eval_id=spec.eval_id, passed=self._passed, failed=self._failed)

    async def _case(self, spec: EvalInput, index: int, case: EvalCase, slots: asyncio.Semaphore) -> None:
        async with slots:
            info = workflow.info()
            child_id = bounded_id(info.workflow_id, f"/case-{index}")
            start = workflow.now()
            run = RunInput(
                query=case.query,
                config=spec.config,
                recorded_tool_results=case.tool_results,
                query_attachments=case.attachments,
            )
            try:
                result: RunResult = await workflow.execute_child_workflow(
                    WORKFLOW_TYPE,
                    run,
                    id=child_id,
                    task_queue=info.task_queue,
                    result_type=RunResult,
                    parent_close_policy=workflow.ParentClosePolicy.TERMINATE,
                    static_summary=f"eval case {index} {case.name}"[:200],
                )
                done = case_run(spec, index, case, child_id, result, _seconds(start))
            except ChildWorkflowError as err:
                done = CaseRun(
                    eval_id=spec.eval_id,
                    index=index,
                    case=case,
                    run_workflow_id=child_id,
                    status="failed",
                    error=str(err.cause or err),
                    usage=Usage(),
                    duration_s=_seconds(start),
                )
            scored = await call_activity(SCORE_EVAL_CASE, done)
        if scored.passed:
            self._passed += 1
        else:
            self._failed += 1
