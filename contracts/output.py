"""Structured output: the JSON Schema a run's final answer must match, and how it is checked.

The LLM activity parses a final answer (one without tool calls) against
`OutputSpec.json_schema`: the whole text as JSON first, then a JSON object or array
extracted from it (a code fence, surrounding prose). It reports the parsed value or
the validation errors (`LLMResponse.output`, `output_errors`). When the answer does not
validate, the run asks the model to repair it (`repairs` times, showing the errors);
after that it fails with `invalid_output`, carrying the last errors. Models that
support native structured output get the schema as litellm's `response_format`
(`native`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints

from contracts.bounds import json_size_at_most
from conversation.messages import OmitDefaults

MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024
"""The JSON size of `OutputSpec.json_schema`."""

OutputMethod = Literal["json", "extracted"]


class OutputSpec(OmitDefaults):
    """The final answer's JSON Schema (`AgentConfig.output`).

    `name` names the schema for providers' native structured output; `repairs` is how
    many repair calls the run makes before failing with `invalid_output`; `native`
    sends the schema as `response_format` when litellm says the model supports it.
    """

    model_config = ConfigDict(extra="forbid")

    json_schema: Annotated[dict[str, JsonValue], json_size_at_most(MAX_OUTPUT_SCHEMA_BYTES, "json_schema")]
    name: Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]{1,64}$")] = "output"
    repairs: Annotated[int, Field(ge=0, le=5)] = 1
    native: bool = True


class SchemaCheck(BaseModel):
    """Answer of `check_output_schema`: `problem` None when the schema is a valid JSON Schema."""

    problem: str | None = None
