"""Evaluations: an `EvalRun` workflow runs a pydantic-evals dataset's cases as child runs and scores them.

The dataset is parsed (and refused by name) before anything starts, by
`activities.evals.datasets`; what the workflow gets is `EvalInput`: the agent's config and,
per case, its query, its recorded tool results and its own one-case dataset text (the case with
the dataset's evaluators) that the `score_eval_case` activity reads again with pydantic-evals.
Each case's result is written to the store by that activity (`store.evals`), so the workflow keeps
only counts. Bounds: at most `MAX_EVAL_CASES` cases (an `EvalRun` of 500 cases makes about
6 history events per case: far under Temporal's 51,200), its input over the claim-check threshold
travels by reference in the payload store.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contracts.agent import AgentConfig
from contracts.llm import Usage
from contracts.tools import RecordedToolResult
from conversation.attachments import Attachments

EVAL_WORKFLOW_TYPE: Final = "EvalRun"
MAX_EVAL_CASES: Final = 500
"""Cases one evaluation may hold (its history stays far under Temporal's event limit)."""
DEFAULT_EVAL_CONCURRENCY: Final = 8
"""Cases run at once when the evaluation names no `concurrency`."""
MAX_EVAL_CONCURRENCY: Final = 64
MAX_CASE_DATASET_CHARS: Final = 200_000
"""A case's own dataset text (the case and the dataset's evaluators)."""

EvalStatus = Literal["running", "completed", "failed"]


class EvalCase(BaseModel):
    """One case as the workflow runs it: the query, the recorded tool results, its dataset text."""

    model_config = ConfigDict(extra="forbid")

    name: str
    query: str
    tool_results: list[RecordedToolResult] = []
    attachments: Attachments = []
    """The files the query carries, by reference (the dataset names them by id: `ReadDataset.attached`)."""
    dataset: Annotated[str, Field(max_length=MAX_CASE_DATASET_CHARS)]
    """A pydantic-evals dataset (JSON) holding only this case and the dataset's evaluators."""


class EvalInput(BaseModel):
    """The start input of an `EvalRun`."""

    model_config = ConfigDict(extra="forbid")

    eval_id: str
    principal: str
    agent: str
    """As the caller named it (`name` or `name@N`)."""
    dataset_name: str
    config: AgentConfig
    cases: Annotated[list[EvalCase], Field(min_length=1, max_length=MAX_EVAL_CASES)]
    concurrency: Annotated[int, Field(ge=1, le=MAX_EVAL_CONCURRENCY)] = DEFAULT_EVAL_CONCURRENCY


class CaseRun(BaseModel):
    """What one case's child run gave: the input of `score_eval_case`."""

    eval_id: str
    index: int
    case: EvalCase
    run_workflow_id: str
    status: str
    answer: str | None = None
    output: JsonValue = None
    error: str | None = None
    tool_calls: list[dict[str, JsonValue]] = []
    usage: Usage = Usage()
    duration_s: float = 0.0


class CaseScore(BaseModel):
    """One evaluator's verdict on a case (a bool, a number or a label), or its failure."""

    evaluator: str
    value: bool | float | str | None = None
    reason: str | None = None
    error: str | None = None


class CaseResult(BaseModel):
    """A scored case, as the store keeps it and `GET /api/evals/{id}` shows it."""

    name: str
    index: int
    passed: bool
    output: JsonValue = None
    scores: list[CaseScore] = []
    run_workflow_id: str
    run_status: str
    cost_usd: float = 0.0
    duration_s: float = 0.0


class EvalFinish(BaseModel):
    """The input of `finish_eval`: the evaluation's end."""

    eval_id: str
    status: EvalStatus
    error: str | None = None


class EvalResult(BaseModel):
    """An `EvalRun`'s result: counts only (the cases are in the store)."""

    eval_id: str
    passed: int
    failed: int
