"""`client.py case SESSION`: a recorded request printed as an evaluation case (docs/evaluations.md).

The CLI runs as a user runs it (a separate `client.py` process) against the dev server, with a worker
on the product's task queue in this process: the request calls the calculator, then answers; its
case carries the query, the calculator's recorded result and the answer. A session with no such
request is refused by name.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.client import Client

from testing import answer, call_tools, tool_call
from tests.cli.test_cli_follow import cli, script_file
from tests.cli.test_cli_output import product_queue

__all__ = ["product_queue"]


async def test_case_prints_the_request_with_its_tool_results(
    client: Client, product_queue: str, tmp_path: Path
) -> None:
    session = f"cli-case-{uuid.uuid4().hex[:8]}"
    turns = [call_tools(tool_call("calculator", {"expression": "6 * 7"})), answer("It is 42.")]
    script = script_file(tmp_path, [t.model_dump(mode="json", exclude_none=True) for t in turns])
    asked = await cli(
        client, "ask", session, "What is 6 * 7?", "--script", script, "--tool", "calculator", "--no-stream",
        "--request-id", "req-sum",
    )  # fmt: skip
    assert asked.code == 0, asked.err
    printed = await cli(client, "case", session, "--name", "sum")
    assert printed.code == 0, printed.err
    assert json.loads(printed.out) == {
        "name": "sum",
        "inputs": {
            "query": "What is 6 * 7?",
            "tool_results": [
                {"name": "calculator", "arguments": {"expression": "6 * 7"}, "result": 42, "ok": True}
            ],
        },
        "expected_output": "It is 42.",
    }
    missing = await cli(client, "case", session, "--request", "req-none")
    assert missing.code == 1 and "unknown_request" in missing.out + missing.err
