"""Checks of a run's input beyond its model's bounds, made before any LLM call so bad input fails fast.

Numbers and sizes are bounded by the payload models themselves (`contracts`); these
are the rules that need more than one field or a look at the values (a config's own rules are
`contracts.config_rules`, which the typed client checks too).
"""

from __future__ import annotations

from contracts import RunInput
from contracts.config_rules import config_problems

__all__ = ["config_problems", "input_problems"]


def input_problems(run: RunInput) -> list[str]:
    """Every problem with `run`, as sentences; empty when the input is valid."""
    problems: list[str] = []
    if not run.query.strip():
        problems.append("query must not be blank")
    if not run.context_ref.strip():
        problems.append("context_ref must not be blank")
    return problems + config_problems(run.config)
