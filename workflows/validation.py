"""Checks of a run's input beyond its model's bounds, made before any LLM call so bad input fails fast.

Numbers and sizes are bounded by the payload models themselves (`contracts`); these
are the rules that need more than one field or a look at the values.
"""

from __future__ import annotations

from contracts import RunInput

# Credentials are read by the LLM activity from the worker's environment; they must
# never travel in workflow input, where they would be stored in history.
_SECRET_SUFFIXES = ("key", "_secret", "secret", "_token", "password", "credentials")


def _looks_secret(name: str) -> bool:
    lowered = name.lower()
    return lowered == "token" or any(lowered.endswith(suffix) for suffix in _SECRET_SUFFIXES)


def input_problems(run: RunInput) -> list[str]:
    """Every problem with `run`, as sentences; empty when the input is valid."""
    cfg = run.config
    problems: list[str] = []
    if not run.query.strip():
        problems.append("query must not be blank")
    if not run.context_ref.strip():
        problems.append("context_ref must not be blank")
    if not cfg.model.strip():
        problems.append("config.model must not be blank")
    duplicates = sorted({name for name in cfg.tools if cfg.tools.count(name) > 1})
    if duplicates:
        problems.append(f"config.tools lists {', '.join(duplicates)} more than once")
    secrets = sorted(key for key in cfg.model_settings.extra if _looks_secret(key))
    if secrets:
        problems.append(
            f"config.model_settings.extra must not carry credentials ({', '.join(secrets)}): "
            "set them in the worker's environment"
        )
    return problems
