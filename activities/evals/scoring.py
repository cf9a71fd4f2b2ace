"""The evaluation activities: `score_eval_case` (a case's evaluators, its row in the store) and `finish_eval`.

`score_eval_case` scores the case with pydantic-evals (`activities.evals.case_score`, imported in
a thread at the worker's first case: start-up, and a worker that never scores one, never pay its
seconds of import) and writes the scored case to the store (an upsert) before the activity
answers, so a retried activity writes the same row. It heartbeats (an LLM judge may take
minutes), so a case whose worker died is retried on another within the heartbeat timeout, not
after the five-minute start-to-close timeout.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Awaitable, Callable

from temporalio import activity

from activities._heartbeat import with_heartbeat
from contracts.activities import FINISH_EVAL_ACTIVITY, SCORE_EVAL_CASE_ACTIVITY
from contracts.evals import CaseResult, CaseRun, EvalFinish
from store.evals import EvalStore

CASE_SCORE_MODULE = "activities.evals.case_score"


async def _scorer() -> Callable[[CaseRun], Awaitable[CaseResult]]:
    """`activities.evals.case_score.score`, its module imported in a thread the first time (seconds)."""
    module = sys.modules.get(CASE_SCORE_MODULE) or await asyncio.to_thread(
        importlib.import_module, CASE_SCORE_MODULE
    )
    score: Callable[[CaseRun], Awaitable[CaseResult]] = module.score
    return score


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
        score = await with_heartbeat(_scorer())
        result = await with_heartbeat(score(run))
        await with_heartbeat(self._evals().put_case(run.eval_id, result))
        return result

    @activity.defn(name=FINISH_EVAL_ACTIVITY)
    async def finish_eval(self, finish: EvalFinish) -> EvalFinish:
        """Record the evaluation's end."""
        await self._evals().finish(finish.eval_id, finish.status, finish.error)
        return finish
