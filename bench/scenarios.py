"""The scenarios of `bench/overhead.py`: one small setup function each, and the registry.

Adding a scenario: write `async def my_case(bench: Bench) -> Prepared` that starts its
worker with `bench.run_worker(...)` on `bench.task_queue("my-case")` and returns how to
start one run and how to check its result, then add a `Scenario` to `SCENARIOS` (with
`like_for_like=False` if it changes the work, so it is reported separately from the
floor comparison). Import heavy modules inside the function, not at the top.

Runs are started with plain JSON payloads (field names of `RunInput` as they exist today),
so the benchmark does not depend on the contracts' Python classes.
"""

from __future__ import annotations

from typing import Any

from bench._harness import Bench, Prepared, Scenario
from bench.floor import floor, floor_unsandboxed

TOOL_ROUNDS = 10
FINAL_ANSWER = "The answer is 70."
QUERY = "What is 10 * 7? Use the calculator for every step."


def scripted_turns(tool_rounds: int = TOOL_ROUNDS) -> list[dict[str, Any]]:
    """The scripted model's turns: one calculator call per round (all different), then the answer."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": f"{i} * 7"}}]}
        for i in range(1, tool_rounds + 1)
    ]
    turns.append({"content": FINAL_ANSWER})
    return turns


def react_run_input(tools: list[str], tool_rounds: int = TOOL_ROUNDS) -> dict[str, Any]:
    """The JSON input of a `ReActRun` that makes `tool_rounds` tool rounds, then answers."""
    return {
        "query": QUERY,
        "config": {
            "model": "scripted",
            "tools": tools,
            "max_iterations": tool_rounds + 1,
            "script": scripted_turns(tool_rounds),
        },
    }


def expect_completed_run(result: Any) -> str | None:
    """A `RunResult` (as JSON) that completed with the scripted final answer, else what differs."""
    if not isinstance(result, dict):
        return f"the result is a {type(result).__name__}, not a RunResult object"
    fields: dict[str, Any] = result  # pyright: ignore[reportUnknownVariableType]
    outcome: dict[str, Any] = fields.get("outcome") or {}
    status = outcome.get("status")
    answers = [
        e["payload"]["content"] for e in fields.get("entries", []) if e["seq"] == outcome.get("answer_seq")
    ]
    if status != "completed" or answers != [FINAL_ANSWER]:
        return f"status {status!r}, answer {answers!r}, error {outcome.get('error')!r}"
    return None


async def ours(bench: Bench) -> Prepared:
    """`ReActRun` with the scripted model, 10 calculator rounds, the product's client and worker."""
    return await _ours(bench, "ours", local_tools=False)


async def ours_local_tools(bench: Bench) -> Prepared:
    """The same run with the calculator registered as a local tool (local activities)."""
    return await _ours(bench, "ours-local", local_tools=True)


async def ours_sandboxed(bench: Bench) -> Prepared:
    """The same run with the worker's workflows in Temporal's full sandbox (`worker.py --sandbox`)."""
    return await _ours(bench, "ours-sandboxed", local_tools=False, sandboxed=True)


async def _ours(bench: Bench, key: str, *, local_tools: bool, sandboxed: bool = False) -> Prepared:
    from activities.calculator import calculator
    from activities.tool_registry import ToolRegistry
    from hosting.connection import connect
    from worker import build_worker

    client = await connect(bench.address)
    queue = bench.task_queue(key)
    registry = ToolRegistry()
    registry.register(calculator, local=local_tools)
    await bench.run_worker(build_worker(client, task_queue=queue, registry=registry, sandboxed=sandboxed))
    run_input = react_run_input(["calculator"])

    async def start(workflow_id: str) -> Any:
        return await client.start_workflow("ReActRun", run_input, id=workflow_id, task_queue=queue)

    return Prepared(start=start, check=expect_completed_run)


async def pydantic_ai_durability(bench: Bench) -> Prepared:
    """pydantic-ai's `TemporalDurability` capability (its current Temporal integration)."""
    from bench.peers.pydantic_ai_peer import durability

    return await durability(bench)


async def pydantic_ai_temporal_agent(bench: Bench) -> Prepared:
    """pydantic-ai's `TemporalAgent` wrapper (deprecated by pydantic-ai, still widely used)."""
    from bench.peers.pydantic_ai_peer import temporal_agent

    return await temporal_agent(bench)


async def openai_agents(bench: Bench) -> Prepared:
    """The OpenAI Agents SDK with Temporal's plugin (runs in the second environment)."""
    from bench.peers.openai_agents_peer import openai_agents_plugin  # pyright: ignore[reportMissingImports]

    prepared: Prepared = await openai_agents_plugin(bench)  # pyright: ignore[reportUnknownVariableType]
    return prepared


SCENARIOS: dict[str, Scenario] = {
    scenario.key: scenario
    for scenario in (
        Scenario("floor", "floor: bare workflow, 2 no-op activities per iteration", floor),
        Scenario("ours", "ours: ReActRun, scripted model", ours),
        Scenario(
            "ours-local",
            "ours, calculator as a local tool (not like-for-like)",
            ours_local_tools,
            like_for_like=False,
        ),
        Scenario(
            "ours-sandboxed",
            "ours, workflows in Temporal's full sandbox (`worker.py --sandbox`)",
            ours_sandboxed,
            like_for_like=False,
        ),
        Scenario(
            "floor-unsandboxed",
            "floor, workflow outside the sandbox (what the sandbox costs)",
            floor_unsandboxed,
            like_for_like=False,
        ),
        Scenario("pydantic-ai", "pydantic-ai TemporalDurability", pydantic_ai_durability),
        Scenario("pydantic-ai-agent", "pydantic-ai TemporalAgent", pydantic_ai_temporal_agent),
        Scenario("openai-agents", "OpenAI Agents SDK + Temporal plugin", openai_agents),
    )
}
"""Every scenario by key; `floor` is always measured, first."""

DEFAULT_SCENARIOS = ("floor", "ours", "ours-local", "ours-sandboxed", "floor-unsandboxed")
PEERS_HERE = ("pydantic-ai", "pydantic-ai-agent")
PEERS_SECOND_ENV = ("openai-agents",)
