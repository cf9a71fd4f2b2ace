"""Structured output from the typed client: the schema a run's final answer must match, and its value.

    result = await runs.run("Name a city.", config, output=City)   # a pydantic model class
    city = output_as(result, City)                                  # RunResult.output, validated

`output=` of `Runs.start`/`Runs.run` (and of a session's ask) is a pydantic model class
(its `model_json_schema()`), a JSON Schema as a dict, or an `OutputSpec` (repairs,
native structured output). The run checks the schema itself: an invalid one fails it
with `invalid_schema` before any LLM call (`RunHandle.result` raises `RejectedError`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue

from clients.errors import RejectedError
from clients.inputs import checked
from contracts import AgentConfig, RunResult
from contracts.errors import INVALID_OUTPUT
from contracts.output import OutputSpec

M = TypeVar("M", bound=BaseModel)
OutputLike = type[BaseModel] | Mapping[str, Any] | OutputSpec
"""What `output=` accepts: a pydantic model class, a JSON Schema dict, or an `OutputSpec`."""

_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def output_spec(output: OutputLike) -> OutputSpec:
    """The `OutputSpec` of `output` (a model class is named after itself).

    Raises:
        RejectedError: `invalid_input`: the schema is over its size limit or not a JSON object.
    """
    if isinstance(output, OutputSpec):
        return checked(OutputSpec, output.model_dump(), "output")
    if isinstance(output, type):
        name = _NAME_CHARS.sub("_", output.__name__)[:64] or "output"
        return checked(OutputSpec, {"json_schema": output.model_json_schema(), "name": name}, "output")
    return checked(OutputSpec, {"json_schema": dict(output)}, "output")


def with_output(config: AgentConfig, output: OutputLike | None) -> AgentConfig:
    """`config` asking for `output` (unchanged when `output` is None)."""
    if output is None:
        return config
    return config.model_copy(update={"output": output_spec(output)})


def output_override(output: OutputLike) -> dict[str, JsonValue]:
    """A session ask's `overrides` entry asking that one request for `output`."""
    return {"output": output_spec(output).model_dump(mode="json")}


def output_as(result: RunResult, model: type[M]) -> M:
    """The run's parsed output (`RunResult.output`) as an instance of `model`.

    Raises:
        RejectedError: the run did not complete: its error's code (e.g. `invalid_output`).
        ValidationError: the output does not fit `model` (the run asked for another schema, or none).
    """
    if result.status != "completed":
        error = result.outcome.error
        code, message = (error.type, error.message) if error is not None else (INVALID_OUTPUT, "")
        text = f"the run has no structured output (it is {result.status}) {message}"
        raise RejectedError(code, text.strip())
    return model.model_validate(result.output)
