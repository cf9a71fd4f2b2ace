"""Every Python example of docs/client.md runs, as a user would run it, against a real dev server and worker.

Each example is written to a file and run in its own process with the server's address
in `TEMPORAL_ADDRESS`. The worker serves the product's task queue in this process; the
examples' model (`openai/gpt-4o-mini`) reaches a fake OpenAI server on 127.0.0.1 through
litellm's real OpenAI path (`OPENAI_API_BASE`); it calls the first offered tool once,
then answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from temporalio.client import Client

from contracts import TASK_QUEUE
from payloads.blob_store import BlobStore
from tests.agent_tools import registry_for_tests
from tests.fake_openai import FakeOpenAI, RecordedRequest, chat_completion, tool_call
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "client.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
REPLY_DELAY_S = 1.0
"""Each answer takes a second, so the examples' steering reaches runs that are still working."""


class ToolUsingModel(FakeOpenAI):
    """Calls the first offered tool once per conversation, then answers in words."""

    async def _handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body))
        await asyncio.sleep(REPLY_DELAY_S)
        roles = [message["role"] for message in body["messages"]]
        tools: list[dict[str, Any]] = body.get("tools") or []
        if tools and "tool" not in roles:  # one tool round per conversation, then answers
            name = str(tools[0]["function"]["name"])
            reply = chat_completion(tool_calls=[tool_call(name, '{"expression": "17 * 23"}')])
        else:
            reply = chat_completion("The answer is 391." if "tool" in roles else "Noted: Friday.")
        return web.Response(text=json.dumps(reply), content_type="application/json")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def product_worker(client: Client, store: BlobStore) -> AsyncIterator[ToolUsingModel]:
    """A worker on the product's task queue whose OpenAI models are the fake server."""
    async with ToolUsingModel() as model:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OPENAI_API_BASE", model.base_url)
            env.setenv("OPENAI_API_KEY", "sk-test-docs-not-a-real-key")
            worker = build_worker(client, registry=registry_for_tests(), store=store, max_cached_workflows=0)
            async with worker:
                yield model


DONE = "--- the example ran to its end ---"
FINALIZER_CRASHES = (-11, -6, 134, 139)


def test_the_doc_has_examples_that_use_the_typed_client_and_a_plain_client() -> None:
    assert len(EXAMPLES) >= 5
    assert sum("from client import" in example for example in EXAMPLES) >= 4
    assert any("from temporalio.client import Client" in example for example in EXAMPLES)


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
async def test_the_example_runs(
    client: Client, product_worker: ToolUsingModel, tmp_path: Path, index: int
) -> None:
    assert TASK_QUEUE == "react-agent"  # the examples rely on the default task queue
    script = tmp_path / f"example_{index}.py"
    script.write_text(
        (os.environ.get("DEBUG_EXAMPLE") and Path(os.environ["DEBUG_EXAMPLE"]).read_text())
        or EXAMPLES[index],
        encoding="utf-8",
    )
    with script.open("a", encoding="utf-8") as file:
        file.write(f"\nprint({DONE!r}, flush=True)\n")
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "PYTHONPATH": str(REPO),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 180)
    printed = out.decode()
    # The SDK's core can crash the interpreter while it finalizes, after the script has run to its
    # end (temporalio/sdk-python#300: SIGSEGV or "PyGILState_Release" abort): not the example's fault.
    finished = process.returncode == 0 or (process.returncode in FINALIZER_CRASHES and DONE in printed)
    assert finished, f"example {index} failed:\n{printed[-3000:]}\n{err.decode()[-3000:]}"
    printed = printed.replace(DONE, "")
    assert printed.strip() or "asyncio.run" not in EXAMPLES[index], f"example {index} printed nothing"
    print(f"--- example {index}\n{printed}")
