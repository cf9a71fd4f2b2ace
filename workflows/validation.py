"""Checks of a run's input, made before any LLM call so bad input fails fast."""

from __future__ import annotations

from contracts import MAX_QUERY_CHARS, RunInput

INVALID_INPUT = "InvalidRunInput"

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
    if len(run.query) > MAX_QUERY_CHARS:
        problems.append(f"query is longer than {MAX_QUERY_CHARS} characters ({len(run.query)})")
    if not run.context_ref.strip():
        problems.append("context_ref must not be blank")
    if not cfg.model.strip():
        problems.append("config.model must not be blank")
    if cfg.max_iterations < 1:
        problems.append(f"config.max_iterations must be at least 1 (got {cfg.max_iterations})")
    if cfg.tool_concurrency < 1:
        problems.append(f"config.tool_concurrency must be at least 1 (got {cfg.tool_concurrency})")
    if cfg.tool_timeout_s <= 0:
        problems.append("config.tool_timeout_s must be positive")
    if cfg.tool_max_retries < 0:
        problems.append("config.tool_max_retries must not be negative")
    if cfg.tool_retry_backoff_s < 0:
        problems.append("config.tool_retry_backoff_s must not be negative")
    if cfg.llm_timeout_s <= 0:
        problems.append("config.llm_timeout_s must be positive")
    if cfg.llm_max_attempts < 1:
        problems.append("config.llm_max_attempts must be at least 1")
    duplicates = sorted({name for name in cfg.tools if cfg.tools.count(name) > 1})
    if duplicates:
        problems.append(f"config.tools lists {', '.join(duplicates)} more than once")
    secrets = sorted(key for key in cfg.model_settings.extra if _looks_secret(key))
    if secrets:
        problems.append(
            f"config.model_settings.extra must not carry credentials ({', '.join(secrets)}): "
            "set them in the worker's environment"
        )
    for index, turn in enumerate(cfg.script):
        if turn.delay_s < 0 or turn.error_times < 0:
            problems.append(f"config.script[{index}]: delay_s and error_times must not be negative")
    return problems
