"""A client's output schema cannot freeze the worker, fetch a URL or read a file (real server, real worker).

Before: `jsonschema` ran in the LLM activity on the worker's event loop with Python's
`re`, so `{"pattern": "^(a+)+$"}` against 32 a's and a "!" froze every run on the worker
for minutes; a `$ref` to `http://...` made the worker send the GET, and a `file://` one
came back inside the `invalid_output` message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client

from contracts import RunResult
from contracts.errors import INVALID_OUTPUT, INVALID_SCHEMA
from testing import answer
from tests.helpers import start_run
from tests.schema_attacks import EVIL_TEXT, SECRET, Listener, exponential_refs, outside_refs

EVIL = {"type": "string", "pattern": "^(a+)+$"}
NO_REPAIR = {"repairs": 0}


@pytest_asyncio.fixture(loop_scope="session")
async def listener() -> AsyncIterator[Listener]:
    async with Listener() as found:
        yield found


async def _failure(handle: Any) -> tuple[str | None, str]:
    """The type and message a run failed with (the run's own outcome, or the workflow's failure)."""
    try:
        result: RunResult = await asyncio.wait_for(handle.result(), 90)
    except Exception as failure:
        cause = getattr(failure, "cause", None)
        return getattr(cause, "type", None), str(cause)
    error = result.outcome.error
    return (error.type, error.message) if error is not None else (None, result.status)


@pytest.mark.parametrize("schema", [EVIL, {"type": "object", "patternProperties": {"^(a|a)*$": {}}}])
async def test_a_backtracking_pattern_does_not_freeze_other_runs(
    client: Client, task_queue: str, schema: dict[str, Any]
) -> None:
    evil_answer = json.dumps(EVIL_TEXT) if "pattern" in schema else json.dumps({EVIL_TEXT: 1})
    evil = await start_run(
        client, task_queue, [answer(evil_answer)], output={"json_schema": schema, "repairs": 0}
    )
    other = await start_run(client, task_queue, [answer("fine")])
    assert (await asyncio.wait_for(other.result(), 30)).answer == "fine"
    kind, _message = await _failure(evil)
    assert kind == INVALID_OUTPUT


async def test_exponential_references_end_by_name(client: Client, task_queue: str) -> None:
    schema = exponential_refs()
    handle = await start_run(
        client, task_queue, [answer('"x"')], output={"json_schema": schema, "repairs": 0}
    )
    kind, message = await _failure(handle)
    assert kind == INVALID_OUTPUT and "too costly" in message


async def test_a_reference_outside_the_schema_is_refused_at_the_start(
    client: Client, task_queue: str, listener: Listener, tmp_path: Path
) -> None:
    secret_file = tmp_path / "secret.json"
    secret_file.write_text(json.dumps({"const": SECRET}))
    for schema in outside_refs(listener.port, str(secret_file))[:3]:
        handle = await start_run(client, task_queue, [answer('"x"')], output={"json_schema": schema})
        kind, message = await _failure(handle)
        assert kind == INVALID_SCHEMA and "does not point inside the schema" in message
        assert SECRET not in message
    assert listener.connections == 0


async def test_a_pattern_too_costly_to_compile_is_refused_at_the_start(
    client: Client, task_queue: str
) -> None:
    schema = {"type": "string", "pattern": "(a{1000}){1000}"}
    handle = await start_run(client, task_queue, [answer('"x"')], output={"json_schema": schema})
    kind, message = await _failure(handle)
    assert kind == INVALID_SCHEMA and "repeats too much" in message
