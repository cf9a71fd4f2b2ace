"""The floor: what Temporal itself costs for the work of a 10-iteration tool-calling run.

A bare workflow that, per iteration, runs an LLM-like and a tool-like no-op activity with
small payloads, then one final LLM-like call: 21 activities, like the agent runs it is
compared with. Plain Temporal defaults: the default data converter, the sandboxed workflow
runner, the workflow cache on.

This module is imported again inside the workflow sandbox: it imports only `temporalio`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow

if TYPE_CHECKING:
    from bench._harness import Bench, Prepared

FLOOR_WORKFLOW = "BenchFloor"
FLOOR_ANSWER = "The answer is 70."
_TIMEOUT = timedelta(seconds=30)


@activity.defn(name="bench_floor_llm")
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


@workflow.defn(name=FLOOR_WORKFLOW)
class BenchFloor:
    """`tool_rounds` iterations of (LLM-like, tool-like), then a final LLM-like call."""

    @workflow.run
    async def run(self, tool_rounds: int) -> str:
        """Run the loop and return the final content."""
        iteration = 0
        while True:
            reply = await workflow.execute_activity(
                floor_llm,
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


async def _floor(bench: Bench, key: str, *, sandboxed: bool) -> Prepared:
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from bench._harness import Prepared

    client = await Client.connect(bench.address)
    queue = bench.task_queue(key)
    options: dict[str, Any] = {} if sandboxed else {"workflow_runner": UnsandboxedWorkflowRunner()}
    await bench.run_worker(
        Worker(
            client, task_queue=queue, workflows=[BenchFloor], activities=[floor_llm, floor_tool], **options
        )
    )

    async def start(workflow_id: str) -> Any:
        return await client.start_workflow(BenchFloor.run, 10, id=workflow_id, task_queue=queue)

    def check(result: Any) -> str | None:
        return None if result == FLOOR_ANSWER else f"answered {result!r}, not {FLOOR_ANSWER!r}"

    return Prepared(start=start, check=check)
