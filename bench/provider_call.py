"""CPU per model call on the provider path, without Temporal: the product's route, litellm's, the bare SDK.

    .venv/bin/python -m bench.provider_call                 # 3 rounds x 300 calls each, interleaved
    .venv/bin/python -m bench.provider_call --calls 100 --rounds 2

One `bench/provider_server.py` in its own process; in this process, three ways to make the
same Chat Completions call to it (the benchmark's first step: the question and the
calculator tool, answered with a tool call), each warmed up, then timed in interleaved
rounds (CPU of this process, `time.process_time`, every thread, per call; 0.2 s of quiet
after each batch is counted, so work a call leaves behind, such as litellm's callbacks in
its thread pool, is charged to it):

* `AsyncOpenAI`: `client.chat.completions.create(...)`, one client, retries off: the floor.
* `litellm.acompletion`: `model="openai/bench-model", api_base=...`, litellm's whole call
  path (what the LLM activity did for `openai/` models before the direct route).
* `ours`: the LLM activity's own call (`activities.llm.llm_call.complete`) of an `LLMRequest` for
  `openai/bench-model`: message conversion, the direct route of `activities/llm/_provider.py`
  (litellm's OpenAI provider without its per-call pipeline), parsing into an `LLMResponse`.

The overhead benchmark (`bench.overhead`) measures the same route inside whole runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.floor import CALCULATOR_TOOL, PROVIDER_KEY, PROVIDER_MODEL, QUERY
from bench.provider_server import launched

Call = Callable[[], Awaitable[object]]


async def _calls(url: str) -> dict[str, Call]:
    from openai import AsyncOpenAI

    from activities.llm import _litellm, llm_call
    from activities.llm.litellm_loading import load_litellm
    from contracts import LLMRequest, ModelSettings, ToolSpec
    from conversation import Message

    await load_litellm()
    client = AsyncOpenAI(base_url=url, api_key=PROVIDER_KEY, max_retries=0)
    messages: list[dict[str, object]] = [{"role": "user", "content": QUERY}]
    spec = ToolSpec.model_validate(CALCULATOR_TOOL["function"])
    request = LLMRequest(
        model=f"openai/{PROVIDER_MODEL}",
        messages=[Message(role="user", content=QUERY)],
        settings=ModelSettings(extra={"api_base": url}),
        timeout_s=30,
        iteration=0,
    )

    async def bare() -> object:
        create: Any = client.chat.completions.create  # plain dicts for its typed parameters
        response: object = await create(
            model=PROVIDER_MODEL, messages=messages, tools=[CALCULATOR_TOOL], timeout=30
        )
        return response

    async def through_litellm() -> object:
        return await _litellm.acompletion(
            {
                "model": f"openai/{PROVIDER_MODEL}",
                "api_base": url,
                "messages": messages,
                "tools": [CALCULATOR_TOOL],
                "num_retries": 0,
                "timeout": 30,
            }
        )

    async def ours() -> object:
        return await llm_call.complete(request, attempt=1, tools=[spec])

    return {"AsyncOpenAI (floor)": bare, "litellm.acompletion": through_litellm, "ours (direct route)": ours}


async def measure(calls: int, rounds: int) -> dict[str, list[float]]:
    """Milliseconds of CPU per call, one figure per round, for each way of calling."""
    os.environ["OPENAI_API_KEY"] = PROVIDER_KEY  # the local server ignores it; no real key is sent
    async with launched() as url:
        ways = await _calls(url)
        for call in ways.values():
            for _ in range(30):
                await call()
        figures: dict[str, list[float]] = {name: [] for name in ways}
        for round_index in range(rounds):
            names = list(ways)
            names = names[round_index % len(names) :] + names[: round_index % len(names)]
            for name in names:
                started = time.process_time()
                for _ in range(calls):
                    await ways[name]()
                await asyncio.sleep(0.2)
                figures[name].append((time.process_time() - started) * 1000 / calls)
        return figures


def main() -> None:
    """Entry point: `python -m bench.provider_call`."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="calls per batch (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.calls, args.rounds))
    floor = statistics.median(figures["AsyncOpenAI (floor)"])
    print(f"| call | CPU ms/call, median of {args.rounds} rounds | rounds | + over AsyncOpenAI |")
    print("|---|---:|---|---:|")
    for name, values in figures.items():
        rounds = ", ".join(f"{v:.2f}" for v in values)
        extra = statistics.median(values) - floor
        print(f"| {name} | {statistics.median(values):.2f} | {rounds} | {extra:+.2f} |")
    print(f"\n{args.calls} calls per batch; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
