"""The floor: what Temporal itself costs for the work of a 10-iteration tool-calling run.

A bare workflow that, per iteration, runs an LLM-like and a tool-like no-op activity with
small payloads, then one final LLM-like call: 21 activities, like the agent runs it is
compared with. Plain Temporal defaults: the default data converter, the sandboxed workflow
runner, the workflow cache on.

`floor-provider` is the same workflow whose LLM-like activity makes one real
`AsyncOpenAI` chat completion per step against the local OpenAI-compatible server
(`bench/provider_server.py`), sending the conversation so far (the question, each
calculator call and its result) and the calculator's tool definition, and returning the
reply's tool call or answer as a small dict: what Temporal plus the same HTTP call cost.

This module is imported again inside the workflow sandbox: it imports only `temporalio`
(the OpenAI SDK is imported when the provider floor's activity is built, outside it).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow

if TYPE_CHECKING:
    from bench._harness import Bench, Prepared

FLOOR_WORKFLOW = "BenchFloor"
FLOOR_ANSWER = "The answer is 70."
FLOOR_LLM = "bench_floor_llm"
FLOOR_LLM_HTTP = "bench_floor_llm_http"
PROVIDER_MODEL = "bench-model"
PROVIDER_KEY = "sk-bench-loopback"
"""The API key every provider-path client sends to the local server (which ignores it)."""
QUERY = "What is 10 * 7? Use the calculator for every step."
CALCULATOR_TOOL = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
_TIMEOUT = timedelta(seconds=30)


@activity.defn(name=FLOOR_LLM)
async def floor_llm(request: dict[str, Any]) -> dict[str, Any]:
    """LLM-like no-op: asks for one tool call per iteration, then answers."""
    iteration = int(request["iteration"])
    if iteration < int(request["tool_rounds"]):
        arguments = f'{{"expression": "{iteration + 1} * 7"}}'
        return {"tool_calls": [{"id": f"call-{iteration}", "name": "calculator", "arguments": arguments}]}
    return {"content": FLOOR_ANSWER, "tool_calls": []}


@activity.defn(name="bench_floor_tool")
async def floor_tool(call: dict[str, Any]) -> dict[str, Any]:
    """Tool-like no-op: echoes a small result."""
    return {"ok": True, "result": f"result of {call['name']}"}


def conversation(iteration: int) -> list[dict[str, Any]]:
    """The chat messages before LLM call `iteration`: the question, then each calculator call and result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUERY}]
    for index in range(iteration):
        arguments = json.dumps({"expression": f"{index + 1} * 7"})
        call = {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": "calculator", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{index}", "content": str((index + 1) * 7)})
    return messages


class ProviderLLM:
    """The provider floor's LLM activity: one `AsyncOpenAI` chat completion per call."""

    def __init__(self, base_url: str) -> None:
        """One client for the local server at `base_url`, retries off (Temporal retries)."""
        from openai import AsyncOpenAI

        self._client = AsyncOpenAI(base_url=base_url, api_key=PROVIDER_KEY, max_retries=0)

    @activity.defn(name=FLOOR_LLM_HTTP)
    async def llm(self, request: dict[str, Any]) -> dict[str, Any]:
        """Ask the server for the next step; the reply's tool calls or answer as a small dict."""
        completion = await self._client.chat.completions.create(
            model=PROVIDER_MODEL,
            messages=conversation(int(request["iteration"])),  # pyright: ignore[reportArgumentType]
            tools=[CALCULATOR_TOOL],  # pyright: ignore[reportArgumentType]
            timeout=30,
        )
        message = completion.choices[0].message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or []
            if c.type == "function"
        ]
        return {"content": message.content or "", "tool_calls": calls}


@workflow.defn(name=FLOOR_WORKFLOW)
class BenchFloor:
    """`tool_rounds` iterations of (LLM-like, tool-like), then a final LLM-like call."""

    @workflow.run
    async def run(self, tool_rounds: int, llm: str = FLOOR_LLM) -> str:
        """Run the loop with the LLM-like activity named `llm` and return the final content."""
        iteration = 0
        while True:
            reply: dict[str, Any] = await workflow.execute_activity(
                llm,
                {"iteration": iteration, "tool_rounds": tool_rounds, "query": "What is 10 * 7?"},
                start_to_close_timeout=_TIMEOUT,
            )
            calls: list[dict[str, Any]] = reply["tool_calls"]
            if not calls:
                return str(reply["content"])
            for call in calls:
                await workflow.execute_activity(floor_tool, call, start_to_close_timeout=_TIMEOUT)
            iteration += 1


async def floor(bench: Bench) -> Prepared:
    """The floor's scenario: its own client (default data converter) and a default worker."""
    return await _floor(bench, "floor", sandboxed=True)


async def floor_unsandboxed(bench: Bench) -> Prepared:
    """The floor with its workflow outside Temporal's sandbox, as the product's worker runs its own."""
    return await _floor(bench, "floor-unsandboxed", sandboxed=False)


async def floor_provider(bench: Bench) -> Prepared:
    """The floor whose LLM-like activity makes one real `AsyncOpenAI` call per step."""
    return await _floor(bench, "floor-provider", sandboxed=True, provider_url=bench.require_provider_url())


async def floor_provider_unsandboxed(bench: Bench) -> Prepared:
    """The provider floor with its workflow outside Temporal's sandbox, as the product runs its own."""
    return await _floor(
        bench, "floor-provider-unsandboxed", sandboxed=False, provider_url=bench.require_provider_url()
    )


async def _floor(bench: Bench, key: str, *, sandboxed: bool, provider_url: str | None = None) -> Prepared:
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from bench._harness import Prepared

    client = await Client.connect(bench.address)
    queue = bench.task_queue(key)
    options: dict[str, Any] = {} if sandboxed else {"workflow_runner": UnsandboxedWorkflowRunner()}
    llm_activity: Any = floor_llm if provider_url is None else ProviderLLM(provider_url).llm
    # The scripted floor's input is as it always was (its history is the scripted table's base).
    floor_args: list[Any] = [10] if provider_url is None else [10, FLOOR_LLM_HTTP]
    await bench.run_worker(
        Worker(
            client, task_queue=queue, workflows=[BenchFloor], activities=[llm_activity, floor_tool], **options
        )
    )

    async def start(workflow_id: str) -> Any:
        return await client.start_workflow(BenchFloor.run, args=floor_args, id=workflow_id, task_queue=queue)

    def check(result: Any) -> str | None:
        return None if result == FLOOR_ANSWER else f"answered {result!r}, not {FLOOR_ANSWER!r}"

    return Prepared(start=start, check=check)
