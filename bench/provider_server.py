"""A local OpenAI-compatible Chat Completions server for the provider-path scenarios, in its own process.

    .venv/bin/python -m bench.provider_server --port 0 --parent-pid PID

It answers `POST /v1/chat/completions` with the benchmark's script, statelessly: a request
whose messages hold n tool results (n < `TOOL_ROUNDS`) gets one `calculator` call for
`(n + 1) * 7`, a request with all of them gets the final answer. So every client (litellm,
pydantic-ai's `OpenAIChatModel`, the Agents SDK's `OpenAIChatCompletionsModel`, a bare
`AsyncOpenAI`) gets the same turns as the scripted scenarios, over real HTTP on loopback,
with zero model latency. It prints `listening on http://127.0.0.1:PORT/v1` once it accepts
connections, and exits when the process `--parent-pid` is gone. It reads the request's JSON
body fully (as a provider would) and keeps no state between requests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # aiohttp is imported by the server process only
    from aiohttp import web

TOOL_ROUNDS = 10
FINAL_ANSWER = "The answer is 70."
MODEL = "bench-model"
PATH = "/v1/chat/completions"


def scripted_reply(messages: list[dict[str, Any]], model: str = MODEL) -> dict[str, Any]:
    """The chat completion answering `messages`: the next calculator call, or the final answer."""
    results = sum(1 for message in messages if message.get("role") == "tool")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if results < TOOL_ROUNDS:
        arguments = json.dumps({"expression": f"{results + 1} * 7"})
        message["tool_calls"] = [
            {
                "id": f"call_{results}",
                "type": "function",
                "function": {"name": "calculator", "arguments": arguments},
            }
        ]
        finish_reason = "tool_calls"
    else:
        message["content"] = FINAL_ANSWER
        finish_reason = "stop"
    return {
        "id": f"chatcmpl-bench-{results}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 20 + 10 * results,
            "completion_tokens": 10,
            "total_tokens": 30 + 10 * results,
        },
    }


async def _completions(request: web.Request) -> web.Response:
    from aiohttp import web

    body: dict[str, Any] = await request.json()
    reply = scripted_reply(list(body.get("messages") or []), str(body.get("model") or MODEL))
    return web.Response(text=json.dumps(reply), content_type="application/json")


async def _watch_parent(parent_pid: int) -> None:
    while True:
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(1)


async def serve(port: int, parent_pid: int | None) -> None:
    """Listen on 127.0.0.1:`port` (0: a free port) until the parent is gone (or forever)."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post(PATH, _completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    address: Any = runner.addresses[0]
    print(f"listening on http://127.0.0.1:{int(address[1])}/v1", flush=True)
    try:
        if parent_pid is None:
            await asyncio.Event().wait()
        else:
            await _watch_parent(parent_pid)
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def launched() -> AsyncIterator[str]:
    """`bench/provider_server.py` in its own process on a free loopback port; yields its base URL."""
    from bench._dev_server import BenchError, die_with_parent

    command = [sys.executable, "-m", "bench.provider_server", "--parent-pid", str(os.getpid())]
    root = Path(__file__).resolve().parents[1]
    # Started from the event loop's thread (it lives as long as the process), like the dev server.
    process = subprocess.Popen(  # noqa: ASYNC220
        die_with_parent(command), cwd=root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), timeout=60)
        if not line.startswith("listening on "):
            raise BenchError(f"the provider server did not start (exit code {process.poll()})")
        yield line.split()[-1]
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait)


def main() -> None:
    """Entry point: `python -m bench.provider_server`."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.parent_pid))


if __name__ == "__main__":
    main()
