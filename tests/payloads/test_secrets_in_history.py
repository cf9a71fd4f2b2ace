"""A provider that echoes the API key in its errors: the key reaches no history and no log line.

Some gateways and proxies put the request's `Authorization` header (or the key) into
their error bodies. Here a real fake OpenAI server does that in a 500 and in a 401, and
a real worker process (`python worker.py`, the sentinel key as `OPENAI_API_KEY` in its
environment, its output captured) runs a `ReActRun` and an `AgentSession` ask against
it. Every event of every history involved is scanned, payloads decoded, failures and
their causes included, and so is everything the worker printed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio.client import Client, WorkflowHandle

from clients import sessions
from contracts import WORKFLOW_TYPE, AgentConfig, ModelSettings, RunInput, RunResult
from contracts.session import AskInput
from payloads.redaction import REDACTED
from tests.fake_openai import FakeOpenAI, error_body
from tests.helpers import spawn_worker

# No `sk-` shape and never after "Bearer" in the echoes below: only the worker's environment
# gives it away, so redaction by environment value is what this test proves.
KEY = f"gw-{uuid.uuid4().hex}-sentinel"


def echo_500() -> dict[str, Any]:
    return {"error": {"message": f"upstream refused the request; headers were {{'authorization': '{KEY}'}}"}}


def echo_401() -> dict[str, Any]:
    # OpenAI-shaped with `invalid_request_error`: litellm calls this 401 a BadRequestError.
    return error_body(f"Invalid API key: {KEY} is not valid for this gateway")


@dataclass
class LoggedWorker:
    """A real worker process whose stdout and stderr go to `log`."""

    task_queue: str
    log: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def worker(client: Client, tmp_path: Path) -> Iterator[LoggedWorker]:
    queue = f"react-secrets-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    address = client.service_client.config.target_host
    process = spawn_worker(
        address, queue, log, env={**os.environ, "OPENAI_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    )
    logged = LoggedWorker(queue, log, process)
    try:
        yield logged
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def agent_config(server: FakeOpenAI, **fields: Any) -> AgentConfig:
    settings = ModelSettings(extra={"api_base": server.base_url})
    return AgentConfig(model="openai/gpt-4o-mini", model_settings=settings, **fields)


def history_texts(history_json: str) -> Iterator[str]:
    """The history's JSON, then every payload's decoded bytes (as text)."""
    yield history_json

    def walk(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in cast(dict[str, object], node).items():
                if key == "data" and isinstance(value, str):
                    try:
                        yield base64.b64decode(value, validate=True).decode(errors="replace")
                    except (binascii.Error, ValueError):
                        yield value
                else:
                    yield from walk(value)
        elif isinstance(node, list):
            for item in cast(list[object], node):
                yield from walk(item)

    yield from walk(json.loads(history_json))


async def scan(handle: WorkflowHandle[Any, Any]) -> str:
    """Everything the workflow's history holds, decoded; fails the test if the key is in it."""
    history = await handle.fetch_history()
    texts = list(history_texts(history.to_json()))
    assert not [t for t in texts if KEY in t], f"the key is in the history of {handle.id}"
    return "\n".join(texts)


async def test_a_run_against_a_gateway_echoing_the_key(client: Client, worker: LoggedWorker) -> None:
    async with FakeOpenAI() as server:
        server.reply(echo_500(), status=500)  # retried...
        server.reply(echo_401(), status=401)  # ...then fails the run: no retry fixes a bad key
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            RunInput(query="What is 6 * 7?", config=agent_config(server, llm_max_attempts=3)),
            id=f"test-secrets-{uuid.uuid4().hex[:8]}",
            task_queue=worker.task_queue,
            result_type=RunResult,
        )
        result = await asyncio.wait_for(handle.result(), timeout=180)
        # The worker really used the key (so the provider had something to echo).
        assert [r.headers.get("Authorization") for r in server.requests] == [f"Bearer {KEY}"] * 2
    assert result.status == "failed"
    assert result.outcome.error is not None and result.outcome.error.type == "authentication"
    assert KEY not in result.model_dump_json() and REDACTED in result.outcome.error.message
    history = await scan(handle)
    # Both echoes reached the worker and were redacted, in the failures and the result alike.
    assert "server_error" in history and "authentication" in history
    assert "upstream refused the request" in history and "Invalid API key" in history
    output = worker.output()  # the SDK logs a failed attempt before it reports it
    assert KEY not in output
    assert "Completing activity as failed" in output and REDACTED in output  # the failures were logged


async def test_a_session_ask_whose_run_hits_the_401(client: Client, worker: LoggedWorker) -> None:
    session_id = sessions.session_workflow_id(f"test-secrets-{uuid.uuid4().hex[:8]}")
    async with FakeOpenAI() as server:
        server.reply(echo_401(), status=401)
        accepted = await sessions.ask(
            client,
            session_id,
            AskInput(query="What is 6 * 7?"),
            agent_id="secrets-test",
            config=agent_config(server),
            task_queue=worker.task_queue,
        )
        record = await asyncio.wait_for(sessions.await_result(client, session_id, accepted.request_id), 180)
        assert len(server.requests) == 1
    record_json = record.model_dump_json()
    assert KEY not in record_json
    assert '"status":"failed"' in record_json and '"type":"authentication"' in record_json
    session = client.get_workflow_handle(session_id)
    # The session keeps the request record and the run's trace: both are in its history too.
    session_history = await scan(session)
    run_history = await scan(client.get_workflow_handle(accepted.run_workflow_id))
    assert REDACTED in session_history and REDACTED in run_history
    await session.terminate(reason="test done")
    assert KEY not in worker.output()
