"""The worker's structured-output parser and schema check (`activities.output.output_parsing`), no server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue

from activities.llm import _litellm
from activities.output.output_parsing import (
    MAX_ERROR_CHARS,
    MAX_ERRORS,
    parse_output,
    response_format,
    schema_problem,
    validation_errors,
)
from contracts import LLMRequest, ModelSettings
from contracts.output import OutputSpec
from conversation import Message

SPEC = OutputSpec(
    json_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"],
    }
)


def test_the_whole_text_is_read_as_json_first() -> None:
    parsed = parse_output('  {"name": "a", "tags": ["x"]}\n', SPEC)
    assert (parsed.ok, parsed.value, parsed.method, parsed.errors) == (
        True,
        {"name": "a", "tags": ["x"]},
        "json",
        [],
    )


def test_a_json_fence_wins_over_other_fences_and_prose() -> None:
    text = 'First {"name": "prose"}\n```python\n{"name": "python"}\n```\n```json\n{"name": "fenced"}\n```'
    parsed = parse_output(text, SPEC)
    assert (parsed.value, parsed.method) == ({"name": "fenced"}, "extracted")
    assert parse_output('```\n{"name": "bare"}\n```', SPEC).value == {"name": "bare"}


def test_prose_around_an_object_with_braces_and_quotes_in_its_strings() -> None:
    inner = {"name": 'a } tricky { "quoted" \\ [string]', "tags": ["{", "]"]}
    text = f"Sure [see below] {{not json}}: {json.dumps(inner)} Hope that helps {{!}}"
    parsed = parse_output(text, SPEC)
    assert (parsed.ok, parsed.value, parsed.method) == (True, inner, "extracted")


def test_the_first_candidate_that_validates_wins() -> None:
    parsed = parse_output('Options: {"other": 1} or {"name": "second"}', SPEC)
    assert parsed.value == {"name": "second"}


def test_an_array_schema_extracts_an_array() -> None:
    spec = OutputSpec(json_schema={"type": "array", "items": {"type": "integer"}})
    assert parse_output("The numbers are [1, 2, 3].", spec).value == [1, 2, 3]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("no JSON at all", "$: the answer is not JSON and contains no JSON object or array"),
        ('{"name": 5}', "$.name: 5 is not of type 'string'"),
        ('Here: {"tags": [1]}', "$: 'name' is a required property"),
        ("NaN", "$: the answer is not JSON and contains no JSON object or array"),
        ('{"name": "unclosed"', "$: the answer is not JSON and contains no JSON object or array"),
    ],
)
def test_an_invalid_answer_says_why(text: str, error: str) -> None:
    parsed = parse_output(text, SPEC)
    assert not parsed.ok and parsed.value is None
    assert error in parsed.errors


def test_errors_are_paths_with_messages_bounded_in_number_and_length() -> None:
    schema: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 1}}
    too_long: list[JsonValue] = ["x" * 5000] * 50
    errors = validation_errors(too_long, schema)
    assert len(errors) == MAX_ERRORS and errors[-1] == "... and 31 more errors"
    assert errors[0].startswith("$[0]: ") and all(len(e) <= MAX_ERROR_CHARS for e in errors)


def test_schema_problems_are_named_and_the_dialect_comes_from_dollar_schema() -> None:
    assert schema_problem(SPEC.json_schema) is None
    assert (
        schema_problem({"type": "objekt"}) == "$.type: 'objekt' is not valid under any of the given schemas"
    )
    assert (
        schema_problem({"$schema": "https://example.com/mine"})
        == "unknown $schema 'https://example.com/mine'"
    )
    # Draft 4's exclusiveMinimum is a boolean; 2020-12's (the default) a number.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 3}
    assert schema_problem(draft4) == "$.exclusiveMinimum: 3 is not of type 'boolean'"
    assert schema_problem({"exclusiveMinimum": 3}) is None


def test_response_format_is_strict_only_for_closed_schemas() -> None:
    closed = OutputSpec(
        json_schema={
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        name="closed",
    )
    assert response_format(closed) == {
        "type": "json_schema",
        "json_schema": {"name": "closed", "schema": closed.json_schema, "strict": True},
    }
    assert response_format(SPEC)["json_schema"] == {
        "name": "output",
        "schema": SPEC.json_schema,
        "strict": False,
    }


def _kwargs(model: str, spec: OutputSpec | None, **extra: Any) -> dict[str, Any]:
    request = LLMRequest(
        model=model,
        messages=[Message(role="user", content="hi")],
        settings=ModelSettings(extra=extra),
        output=spec,
    )
    return _litellm.completion_kwargs(request, attempt=1)


def test_native_structured_output_only_where_litellm_supports_it() -> None:
    assert _kwargs("openai/gpt-4o-mini", SPEC)["response_format"] == response_format(SPEC)
    assert "response_format" not in _kwargs("openai/gpt-3.5-turbo", SPEC)
    assert "response_format" not in _kwargs("scripted", SPEC)
    assert "response_format" not in _kwargs("openai/gpt-4o-mini", None)
    off = SPEC.model_copy(update={"native": False})
    assert "response_format" not in _kwargs("openai/gpt-4o-mini", off)
    # The agent's own response_format (model_settings.extra) wins.
    own = {"type": "json_object"}
    assert _kwargs("openai/gpt-4o-mini", SPEC, response_format=own)["response_format"] == own
