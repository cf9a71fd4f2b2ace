"""A pydantic-evals dataset (its JSON form, or its YAML or JSON text) read, checked and split into cases.

`read_dataset` refuses, by name and before anything is created: a dataset pydantic-evals cannot
read (`invalid_dataset`), an evaluator that is not one of `EVALUATORS` (`unknown_evaluator`), an
`LLMJudge` whose model is not a litellm model (`unknown_judge_model`), more than `MAX_EVAL_CASES`
cases. A case's `inputs` is its query text, or `{"query", "tool_results"?, "attachments"?}` with
the recorded tool results the run answers from (`contracts.tools.RecordedToolResult`) and the ids
of files its query carries (at most `MAX_ATTACHMENTS_PER_MESSAGE`; the caller's own files, looked
up by `ReadDataset.attached` before anything is created). Each case becomes an
`EvalCase` carrying its own one-case dataset (the case and the dataset's evaluators, as JSON),
which the scorer reads again with pydantic-evals.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import yaml
from pydantic import ValidationError
from pydantic_evals import Dataset
from pydantic_evals.evaluators import LLMJudge

from activities.evals.evaluators import CUSTOM_EVALUATORS, EVALUATOR_NAMES
from activities.evals.judge import unknown_judge_model
from contracts.errors import INVALID_DATASET, UNKNOWN_EVALUATOR, UNKNOWN_JUDGE_MODEL
from contracts.evals import MAX_CASE_DATASET_CHARS, MAX_EVAL_CASES, EvalCase
from contracts.tools import RecordedToolResult
from conversation.attachments import MAX_ATTACHMENTS_PER_MESSAGE, Attachment


class DatasetError(ValueError):
    """A dataset refused: `code` names why (one of the codes above), the message says what."""

    def __init__(self, code: str, message: str) -> None:
        """A refusal with its code."""
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ReadDataset:
    """A dataset read and checked: its name and its cases; `attached` makes them ready for an `EvalRun`."""

    name: str
    cases: list[EvalCase]
    file_ids: list[list[str]]
    """The ids of the files each case's inputs name, in case order (none: `cases` are ready)."""

    async def attached(self, file: Callable[[str], Awaitable[Attachment]]) -> list[EvalCase]:
        """The cases with the files their inputs name (`file`: the caller's file of an id, or it raises)."""
        cases: list[EvalCase] = []
        for case, ids in zip(self.cases, self.file_ids, strict=True):
            files = [await file(file_id) for file_id in ids]
            cases.append(case.model_copy(update={"attachments": files}) if files else case)
        return cases


def _as_mapping(dataset: object) -> dict[str, Any]:
    if isinstance(dataset, str):
        try:
            loaded: object = json.loads(dataset)
        except ValueError:
            try:
                loaded = yaml.safe_load(dataset)
            except yaml.YAMLError as exc:
                raise DatasetError(INVALID_DATASET, f"the dataset is neither JSON nor YAML: {exc}") from None
        dataset = loaded
    if not isinstance(dataset, dict):
        raise DatasetError(
            INVALID_DATASET, "a dataset is an object with `cases` (pydantic-evals' file format)"
        )
    return cast(dict[str, Any], dataset)


def _evaluator_name(spec: object) -> str | None:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and len(cast(dict[str, Any], spec)) == 1:
        return str(next(iter(cast(dict[str, Any], spec))))
    return None


def _check_names(specs: object, where: str) -> None:
    for spec in cast(list[object], specs) if isinstance(specs, list) else []:
        name = _evaluator_name(spec)
        if name is not None and name not in EVALUATOR_NAMES:
            known = ", ".join(sorted(EVALUATOR_NAMES))
            raise DatasetError(
                UNKNOWN_EVALUATOR, f"unknown evaluator {name!r} in {where}; evaluators: {known}"
            )


def _case_input(inputs: object, name: str) -> tuple[str, list[RecordedToolResult], list[str]]:
    if isinstance(inputs, str):
        return inputs, [], []
    if isinstance(inputs, dict):
        fields = cast(dict[str, Any], inputs)
        query = fields.get("query")
        unknown = sorted(set(fields) - {"query", "tool_results", "attachments"})
        if isinstance(query, str) and not unknown:
            try:
                results: list[object] = list(fields.get("tool_results") or [])
                recorded = [RecordedToolResult.model_validate(r) for r in results]
            except ValidationError as exc:
                raise DatasetError(INVALID_DATASET, f"case {name!r}: a recorded tool result: {exc}") from None
            return query, recorded, _file_ids(fields.get("attachments"), name)
    raise DatasetError(
        INVALID_DATASET,
        f'case {name!r}: `inputs` must be the query text or {{"query", "tool_results"?, "attachments"?}}',
    )


def _file_ids(given: object, name: str) -> list[str]:
    """The file ids of a case's `attachments` (None: none)."""
    if given is None:
        return []
    ids = cast(list[object], given) if isinstance(given, list) else None
    if ids is None or not all(isinstance(i, str) for i in ids) or len(ids) > MAX_ATTACHMENTS_PER_MESSAGE:
        raise DatasetError(
            INVALID_DATASET,
            f"case {name!r}: `attachments` must be a list of at most {MAX_ATTACHMENTS_PER_MESSAGE} file ids",
        )
    return cast(list[str], ids)


def read_dataset(dataset: object, extra_cases: Sequence[Mapping[str, Any]] = ()) -> ReadDataset:
    """The dataset read with pydantic-evals, checked and split into one `EvalCase` per case.

    `extra_cases` (cases made from recorded requests: `clients.eval_cases`) follow the dataset's
    own, which may then have none.

    Raises:
        DatasetError: `invalid_dataset`, `unknown_evaluator` or `unknown_judge_model`.
    """
    data = _as_mapping(dataset)
    data.pop("$schema", None)
    raw_cases = data.get("cases", [] if extra_cases else None)
    if isinstance(raw_cases, list) and extra_cases:
        raw_cases = data["cases"] = [*cast(list[Any], raw_cases), *(dict(c) for c in extra_cases)]
    if not isinstance(raw_cases, list) or not raw_cases:
        raise DatasetError(INVALID_DATASET, "the dataset has no `cases`")
    cases_list = cast(list[Any], raw_cases)
    if len(cases_list) > MAX_EVAL_CASES:
        raise DatasetError(
            INVALID_DATASET, f"the dataset has {len(cases_list)} cases; at most {MAX_EVAL_CASES}"
        )
    _check_names(data.get("evaluators"), "the dataset")
    for i, raw in enumerate(cases_list):
        if isinstance(raw, dict):
            _check_names(cast(dict[str, Any], raw).get("evaluators"), f"case {i + 1}")
    try:
        parsed = Dataset[Any, Any, Any].from_dict(
            data, custom_evaluator_types=CUSTOM_EVALUATORS, default_name="dataset"
        )
    except (ValidationError, ValueError, TypeError) as exc:
        raise DatasetError(INVALID_DATASET, f"pydantic-evals cannot read the dataset: {exc}") from None
    judges = [e for e in parsed.evaluators if isinstance(e, LLMJudge)]
    judges += [e for case in parsed.cases for e in case.evaluators if isinstance(e, LLMJudge)]
    for judge in judges:
        problem = unknown_judge_model(judge.model)
        if problem is not None:
            raise DatasetError(UNKNOWN_JUDGE_MODEL, problem)
    name = parsed.name or "dataset"
    cases: list[EvalCase] = []
    file_ids: list[list[str]] = []
    for i, (raw, case) in enumerate(zip(cases_list, parsed.cases, strict=True)):
        case_name = case.name or f"Case {i + 1}"
        query, recorded, ids = _case_input(case.inputs, case_name)
        file_ids.append(ids)
        one = {"name": name, "cases": [{**cast(dict[str, Any], raw), "name": case_name}]}
        if data.get("evaluators"):
            one["evaluators"] = data["evaluators"]
        text = json.dumps(one, ensure_ascii=False)
        if len(text) > MAX_CASE_DATASET_CHARS:
            raise DatasetError(
                INVALID_DATASET, f"case {case_name!r} is over {MAX_CASE_DATASET_CHARS} characters"
            )
        cases.append(EvalCase(name=case_name, query=query, tool_results=recorded, dataset=text))
    return ReadDataset(name=name, cases=cases, file_ids=file_ids)
