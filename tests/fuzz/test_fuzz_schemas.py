"""Malicious and random output schemas against the worker's schema check and answer parser (no server).

The parser must stay within its budget (`activities.output.bounded_schema.VALIDATION_BUDGET_S`)
whatever the schema and the answer, never raise, never fetch or read a reference, and
the check at a run's start must name every schema it will not apply.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from activities.output.bounded_schema import VALIDATION_BUDGET_S
from activities.output.output_parsing import parse_output, schema_problem
from contracts.output import OutputSpec
from tests.fuzz_values import json_values
from tests.schema_attacks import (
    COSTLY_SCHEMAS,
    COSTLY_TO_COMPILE,
    EVIL_PATTERNS,
    EVIL_TEXT,
    SECRET,
    Listener,
    answer_for,
    outside_refs,
)

SLACK_S = 1.5
"""What a loaded machine may add to the budget. Times are CPU seconds of this process: `regex` counts
its match time limit in CPU time, so on a machine shared by many processes a match's wall time is longer."""


@pytest_asyncio.fixture(loop_scope="session")
async def listener() -> AsyncIterator[Listener]:
    async with Listener() as found:
        yield found


def _timed_parse(schema: dict[str, Any], text: str) -> tuple[float, Any]:
    began = time.process_time()
    parsed = parse_output(text, OutputSpec(json_schema=schema))
    return time.process_time() - began, parsed


@pytest.mark.parametrize("schema", COSTLY_SCHEMAS, ids=lambda s: json.dumps(s)[:40])
def test_a_costly_schema_is_bounded(schema: dict[str, Any]) -> None:
    assert schema_problem(schema) is None  # valid: the bound is at validation, not a refusal
    elapsed, parsed = _timed_parse(schema, answer_for(schema))
    assert elapsed < VALIDATION_BUDGET_S + SLACK_S
    assert parsed.ok or parsed.errors  # a named outcome either way


@pytest.mark.parametrize("pattern", COSTLY_TO_COMPILE)
def test_a_pattern_too_costly_to_compile_is_refused_by_name(pattern: str) -> None:
    cases: list[dict[str, Any]] = [{"pattern": pattern}, {"patternProperties": {pattern: {}}}]
    for schema in cases:
        began = time.monotonic()
        problem = schema_problem(schema)
        assert problem is not None and "repeats too much" in problem
        assert time.monotonic() - began < 1


async def test_no_reference_outside_the_schema_is_fetched_or_read(listener: Listener, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret.json"
    secret_file.write_text(json.dumps({"const": SECRET}))
    for schema in outside_refs(listener.port, str(secret_file)):
        problem = await asyncio.to_thread(schema_problem, schema)
        assert problem is not None and "does not point inside the schema" in problem, schema
        parsed = await asyncio.to_thread(parse_output, json.dumps("x"), OutputSpec(json_schema=schema))
        assert not parsed.ok and SECRET not in " ".join(parsed.errors)
    assert listener.connections == 0


def test_references_inside_the_schema_still_resolve() -> None:
    schema: dict[str, Any] = {
        "$defs": {"name": {"type": "string", "pattern": "^[A-Z]"}},
        "properties": {"n": {"$ref": "#/$defs/name"}},
    }
    assert schema_problem(schema) is None
    assert parse_output('{"n": "Ada"}', OutputSpec(json_schema=schema)).ok
    assert parse_output('{"n": "ada"}', OutputSpec(json_schema=schema)).errors == [
        "$.n: 'ada' does not match '^[A-Z]'"
    ]


KEYWORDS = st.sampled_from(
    ["pattern", "patternProperties", "additionalProperties", "uniqueItems", "allOf", "anyOf"]
)


@st.composite
def schemas(draw: st.DrawFn, depth: int = 3) -> dict[str, Any]:
    """Random schemas built from the costly keywords, the evil patterns and nesting."""
    schema: dict[str, Any] = {}
    for keyword in draw(st.lists(KEYWORDS, max_size=3)):
        pattern = draw(st.sampled_from(EVIL_PATTERNS))
        if keyword == "pattern":
            schema["pattern"] = pattern
        elif keyword == "patternProperties":
            schema["patternProperties"] = {pattern: draw(schemas(depth - 1)) if depth else {}}
        elif keyword == "additionalProperties":
            schema["additionalProperties"] = draw(st.booleans())
        elif keyword == "uniqueItems":
            schema["uniqueItems"] = True
        elif depth:
            schema[keyword] = draw(st.lists(schemas(depth - 1), min_size=1, max_size=3))
    return schema


ANSWERS = (
    json_values | st.just(EVIL_TEXT) | st.dictionaries(st.sampled_from([EVIL_TEXT, "a", "b"]), json_values)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas(), value=ANSWERS)
def test_random_costly_schemas_stay_within_the_budget(schema: dict[str, Any], value: Any) -> None:
    assert schema_problem(schema) is None
    try:
        text = json.dumps(value)
    except ValueError:  # NaN and the like: not JSON
        return
    elapsed, parsed = _timed_parse(schema, text)
    assert elapsed < VALIDATION_BUDGET_S + SLACK_S
    assert parsed.ok == (not parsed.errors)
