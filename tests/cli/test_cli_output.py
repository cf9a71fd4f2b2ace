"""`client.py run/ask --output-schema FILE.json`: checked before connecting, the output printed as JSON.

The CLI runs as a user runs it (separate `client.py` processes) against the dev server, with
a worker on the product's task queue in this process.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from clients.runs import Runs
from contracts import TASK_QUEUE
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from tests.cli.test_cli_follow import cli, script_file
from tests.run.test_structured_output import PARIS, SCHEMA
from worker import build_worker


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_queue(client: Client, store: BlobStore) -> AsyncIterator[str]:
    """A worker on the product's task queue (where the CLI starts runs and sessions)."""
    worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
    async with worker:
        yield TASK_QUEUE


def _file(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return str(path)


def _printed_output(stdout: str) -> Any:
    """The JSON printed after the `output:` line."""
    _, marker, tail = stdout.rpartition("output:\n")
    assert marker, stdout
    return json.loads(tail)


async def test_run_prints_the_parsed_output(client: Client, product_queue: str, tmp_path: Path) -> None:
    schema = _file(tmp_path, "city.json", json.dumps(SCHEMA))
    fenced = f"Sure:\n```json\n{json.dumps(PARIS)}\n```"
    run_id = f"cli-output-{uuid.uuid4().hex[:8]}"
    done = await cli(
        client,
        "run",
        "The capital of France?",
        "--script",
        script_file(tmp_path, [{"content": fenced}]),
        "--output-schema",
        schema,
        "--no-stream",
        "--id",
        run_id,
    )
    assert done.code == 0, done.err
    assert _printed_output(done.out) == PARIS
    result = await Runs(client, task_queue=product_queue).get(run_id).result()
    assert result.output == PARIS
    assert result.outcome.usage.llm_calls == 1


async def test_run_fails_when_the_answer_never_matches(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    schema = _file(tmp_path, "city.json", json.dumps(SCHEMA))
    script = script_file(tmp_path, [{"content": "Paris"}, {"content": "Still just Paris"}])
    done = await cli(client, "run", "Capital?", "--script", script, "--output-schema", schema, "--no-stream")
    assert done.code == 1
    assert "invalid_output" in done.out + done.err and "output:\n" not in done.out


async def test_ask_prints_its_requests_output(client: Client, product_queue: str, tmp_path: Path) -> None:
    schema = _file(tmp_path, "city.json", json.dumps(SCHEMA))
    session = f"cli-output-session-{uuid.uuid4().hex[:8]}"
    script = script_file(tmp_path, [{"content": f"It is {json.dumps(PARIS)}."}])
    done = await cli(
        client, "ask", session, "The capital of France?", "--script", script, "--output-schema", schema
    )
    assert done.code == 0, done.err
    assert _printed_output(done.out) == PARIS
    # Only that request asked for it: the next one answers in prose.
    plain = script_file(tmp_path, [{"content": "Plain words."}])
    again = await cli(client, "ask", session, "And Spain?", "--script", plain)
    assert again.code == 0 and "output:" not in again.out, again.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON in"),
        ("[1, 2]", "a JSON Schema must be a JSON object, got list"),
        ('{"type": "objekt"}', "is not a valid JSON Schema: $.type: 'objekt' is not valid"),
        ('{"$schema": "https://example.com/mine"}', "unknown $schema"),
    ],
    ids=["not-json", "not-object", "invalid", "unknown-dialect"],
)
async def test_a_bad_schema_file_is_a_clear_error_before_connecting(
    client: Client, tmp_path: Path, content: str, message: str
) -> None:
    schema = _file(tmp_path, "bad.json", content)
    script = script_file(tmp_path, [{"content": "{}"}])
    run_id = f"cli-output-bad-{uuid.uuid4().hex[:8]}"
    done = await cli(
        client, "run", "Q?", "--script", script, "--output-schema", schema, "--no-follow", "--id", run_id
    )
    assert done.code == 1 and message in done.err, (done.out, done.err)
    with pytest.raises(RPCError) as caught:  # nothing was started
        await client.get_workflow_handle(run_id).describe()
    assert caught.value.status == RPCStatusCode.NOT_FOUND
