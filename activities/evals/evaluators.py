"""The product's own pydantic-evals evaluators, beside pydantic-evals' (`EVALUATORS` lists every one).

- `JsonSchemaMatch(schema)`: the output (parsed when it is JSON text) is valid against a JSON Schema;
- `ToolTrajectory(expected, mode)`: the run's tool calls, by name (or `{"name", "arguments"}`),
  `exact` (the same calls in the same order), `in_order` (these, in this order, others between)
  or `contains` (these, in any order);
- `MaxCost(max_usd)`: the run's cost (`Usage.cost_usd`) is at most `max_usd`.

They read what the scorer gives every evaluator in its context: the run's tool calls as the
attribute `tool_calls` and its cost as the metric `cost_usd` (`activities.evals.scoring`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]
from pydantic_evals.evaluators import (
    Contains,
    Equals,
    EqualsExpected,
    EvaluationReason,
    Evaluator,
    EvaluatorContext,
    IsInstance,
    LLMJudge,
    MaxDuration,
)


@dataclass(repr=False)
class JsonSchemaMatch(Evaluator[object, object, object]):
    """The output is valid against `schema` (an output that is JSON text is parsed first)."""

    schema: dict[str, Any]

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        """Whether the output matches, with the first error as the reason."""
        output: Any = ctx.output
        if isinstance(output, str):
            try:
                output = json.loads(output)
            except ValueError:
                pass  # a plain text answer: validated as the string it is
        errors: Any = Draft202012Validator(self.schema).iter_errors(output)  # pyright: ignore[reportUnknownMemberType]
        error: Any = best_match(errors)  # pyright: ignore[reportUnknownVariableType]
        reason: str | None = None if error is None else str(error.message)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return EvaluationReason(error is None, reason)


@dataclass(repr=False)
class ToolTrajectory(Evaluator[object, object, object]):
    """The run's tool calls match `expected` (names, or `{"name", "arguments"}`) by `mode`."""

    expected: list[str | dict[str, Any]] = field(default_factory=list[str | dict[str, Any]])
    mode: Literal["exact", "in_order", "contains"] = "exact"

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> EvaluationReason:
        """Whether the calls match, with the calls made as the reason when they do not."""
        made = cast(list[dict[str, Any]], ctx.attributes.get("tool_calls", []))
        wanted = [w if isinstance(w, dict) else {"name": w} for w in self.expected]
        ok = _trajectory(made, wanted, self.mode)
        return EvaluationReason(ok, None if ok else f"tool calls made: {[m['name'] for m in made]}")


def _matches(made: dict[str, Any], wanted: dict[str, Any]) -> bool:
    if made.get("name") != wanted.get("name"):
        return False
    if "arguments" not in wanted:
        return True
    try:
        arguments = json.loads(made.get("arguments") or "{}")
    except ValueError:
        return False
    return arguments == wanted["arguments"]


def _trajectory(made: list[dict[str, Any]], wanted: list[dict[str, Any]], mode: str) -> bool:
    if mode == "exact":
        return len(made) == len(wanted) and all(_matches(m, w) for m, w in zip(made, wanted, strict=True))
    if mode == "in_order":
        calls = iter(made)
        return all(any(_matches(m, w) for m in calls) for w in wanted)
    left = list(made)
    for w in wanted:
        found = next((m for m in left if _matches(m, w)), None)
        if found is None:
            return False
        left.remove(found)
    return True


@dataclass(repr=False)
class MaxCost(Evaluator[object, object, object]):
    """The run cost at most `max_usd` (its `cost_usd` metric)."""

    max_usd: float

    def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> bool:
        """Whether the run's cost is within the bound."""
        return float(ctx.metrics.get("cost_usd", 0.0)) <= self.max_usd


CUSTOM_EVALUATORS: Final[tuple[type[Evaluator[object, object, object]], ...]] = (
    JsonSchemaMatch,
    ToolTrajectory,
    MaxCost,
)
EVALUATORS: Final[tuple[type[Evaluator[object, object, object]], ...]] = (
    Equals,
    EqualsExpected,
    Contains,
    IsInstance,
    MaxDuration,
    LLMJudge,
    *CUSTOM_EVALUATORS,
)
"""The evaluators a dataset may name (pydantic-evals' span-based ones need traces a run does not give)."""
EVALUATOR_NAMES: Final = frozenset(e.get_serialization_name() for e in EVALUATORS)
