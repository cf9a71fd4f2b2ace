"""Structured output in the worker: parsing a final answer against `OutputSpec.json_schema`.

A final answer is read JSON-first: the whole text as JSON (`output_method="json"`),
else a JSON object or array found in it (`"extracted"`): the body of a ```json fence,
then of any other fence, then each balanced `{...}` or `[...]` of the surrounding
prose, in order; the first candidate that validates wins. The schema's `$schema`
picks the `jsonschema` validator class (Draft 2020-12 when it names none); what a
client's schema may cost is bounded by `activities.output.bounded_schema` (patterns with a
time limit, a budget for the whole answer, references only inside the schema). Errors are
short readable strings (`$.path: message`), at most `MAX_ERRORS`, each at most
`MAX_ERROR_CHARS`: they travel in the activity's answer and, in a repair call, to the model.

`check_output_schema` is the activity the run calls once, at its start: an invalid
schema (or one that points outside itself, or whose patterns are too costly) fails the
run with `invalid_schema` before any LLM call.

`jsonschema` is imported on first use: it costs a worker's start-up otherwise.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue
from temporalio import activity

from activities.output.bounded_schema import Budget, SchemaTooCostly, bounded_validator, validator_for
from activities.output.schema_refusals import bounded_problem
from contracts.activities import CHECK_OUTPUT_SCHEMA_ACTIVITY
from contracts.llm import LLMResponse
from contracts.output import OutputMethod, OutputSpec, SchemaCheck

MAX_ERRORS = 20
"""Validation errors reported for one answer."""
MAX_ERROR_CHARS = 300
"""Characters of one validation error."""
MAX_CANDIDATES = 50
"""Balanced `{...}` / `[...]` spans of prose tried as JSON (a bound on the work for any answer)."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_CLOSER = {"{": "}", "[": "]"}


@dataclass
class ParsedOutput:
    """What parsing one answer gave: the value and how it was found, or why it does not match."""

    ok: bool = False
    value: JsonValue = None
    method: OutputMethod | None = None
    errors: list[str] = field(default_factory=list[str])


class _NotJson(ValueError):
    """A constant JSON does not have (`NaN`, `Infinity`): the value could not travel as JSON."""


def _reject_constant(name: str) -> object:
    raise _NotJson(f"{name} is not JSON")


def loads(text: str) -> JsonValue:
    """Strict JSON (no `NaN`/`Infinity`). Raises ValueError when `text` is not one JSON value."""
    return cast(JsonValue, json.loads(text, parse_constant=_reject_constant))


def fenced_blocks(text: str) -> list[str]:
    """The bodies of the text's code fences: ```json ones first, then the others, each in order."""
    blocks = [(match.group(1).lower(), match.group(2)) for match in _FENCE.finditer(text)]
    return [body for tag, body in blocks if tag == "json"] + [body for tag, body in blocks if tag != "json"]


def _balanced_end(text: str, start: int) -> int | None:
    """The index after the bracket closing the one at `start` (strings and escapes respected), or None."""
    stack = [_CLOSER[text[start]]]
    in_string = False
    escaped = False
    for index in range(start + 1, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSER:
            stack.append(_CLOSER[char])
        elif char in "}]":
            if char != stack.pop():
                return None
            if not stack:
                return index + 1
    return None


def balanced_spans(text: str) -> Iterator[str]:
    """Each balanced `{...}` or `[...]` of `text` that is JSON, left to right (`MAX_CANDIDATES` tried)."""
    position = 0
    tried = 0
    while tried < MAX_CANDIDATES:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        tried += 1
        end = _balanced_end(text, start)
        if end is not None:
            try:
                loads(text[start:end])
            except ValueError:
                pass
            else:
                yield text[start:end]
                position = end
                continue
        position = start + 1


def candidates(text: str) -> Iterator[JsonValue]:
    """The JSON values found in an answer that is not JSON as a whole: fences first, then prose."""
    for block in fenced_blocks(text):
        try:
            yield loads(block.strip())
        except ValueError:
            continue
    for span in balanced_spans(text):
        yield loads(span)


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema (one readable line), or None."""
    from jsonschema import FormatChecker, SchemaError

    try:
        cls = validator_for(schema)
        with Budget():  # the meta-schema's own `format: regex` is checked below, not by `re`
            cls.check_schema(dict(schema), format_checker=FormatChecker(formats=()))
    except SchemaError as error:
        where = _path(cast(Iterable[object], error.absolute_path))
        return _bounded(f"{where}: {error.message}" if where != "$" else error.message)
    except (ValueError, SchemaTooCostly, RecursionError) as error:
        return _bounded(str(error))
    problem = bounded_problem(schema)
    return _bounded(problem) if problem is not None else None


def _path(parts: Iterable[object]) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _error_key(error: Any) -> tuple[str, str]:
    return _path(cast(Iterable[object], error.absolute_path)), str(error.message)


def validation_errors(value: JsonValue, schema: Mapping[str, Any]) -> list[str]:
    """Why `value` does not match `schema`: `$.path: message` strings, bounded; empty when it matches."""
    try:
        validator: Any = bounded_validator(schema)
        found = sorted(cast(Iterable[Any], validator.iter_errors(value)), key=_error_key)
    except SchemaTooCostly as error:
        return [_bounded(f"$: the schema is too costly to apply to this answer: {error}")]
    except Exception as error:  # an unresolvable $ref and the like: the schema cannot check anything
        return [_bounded(f"the schema cannot be applied: {error}")]
    errors = [_bounded(f"{_path(error.absolute_path)}: {error.message}") for error in found[:MAX_ERRORS]]
    if len(found) > MAX_ERRORS:
        errors[-1] = f"... and {len(found) - MAX_ERRORS + 1} more errors"
    return errors


def parse_output(text: str, spec: OutputSpec) -> ParsedOutput:
    """Parse a final answer against `spec.json_schema`: whole text as JSON, then extracted JSON.

    All of it within one `VALIDATION_BUDGET_S` (`activities.output.bounded_schema`).
    """
    with Budget():
        return _parse_output(text, spec.json_schema)


def _parse_output(text: str, schema: Mapping[str, Any]) -> ParsedOutput:
    try:
        whole = loads(text.strip())
    except ValueError:
        pass
    else:
        errors = validation_errors(whole, schema)
        return ParsedOutput(ok=not errors, value=whole if not errors else None, method="json", errors=errors)
    first_errors: list[str] | None = None
    for value in candidates(text):
        errors = validation_errors(value, schema)
        if not errors:
            return ParsedOutput(ok=True, value=value, method="extracted")
        first_errors = first_errors if first_errors is not None else errors
    if first_errors is not None:
        return ParsedOutput(method="extracted", errors=first_errors)
    return ParsedOutput(errors=["$: the answer is not JSON and contains no JSON object or array"])


async def apply_output(response: LLMResponse, spec: OutputSpec) -> None:
    """Fill the output fields of a final answer (`output`, `output_ok`, `output_errors`, `output_method`).

    Parsing runs in a thread: the worker's event loop never waits on a client's schema.
    """
    parsed = await asyncio.to_thread(parse_output, response.content, spec)
    response.output = parsed.value
    response.output_ok = parsed.ok
    response.output_errors = parsed.errors
    response.output_method = parsed.method


def strict_compatible(schema: JsonValue) -> bool:
    """Whether OpenAI's strict mode accepts `schema`: every object closed, all its properties required."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = schema.get("required")
        if schema.get("additionalProperties") is not False or not isinstance(required, list):
            return False
        if set(map(str, required)) != set(properties):
            return False
    return all(strict_compatible(value) for value in schema.values())


def response_format(spec: OutputSpec) -> dict[str, JsonValue]:
    """The `response_format` of native structured output (strict when the schema allows it)."""
    schema = spec.json_schema
    strict = schema.get("type") == "object" and strict_compatible(schema)
    return {"type": "json_schema", "json_schema": {"name": spec.name, "schema": schema, "strict": strict}}


@activity.defn(name=CHECK_OUTPUT_SCHEMA_ACTIVITY)
async def check_output_schema(spec: OutputSpec) -> SchemaCheck:
    """Whether `spec.json_schema` is a valid JSON Schema that is safe to apply (`problem` says why not).

    Never raises for the schema; runs in a thread, off the worker's event loop.
    """
    return SchemaCheck(problem=await asyncio.to_thread(schema_problem, spec.json_schema))
