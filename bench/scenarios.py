"""The scenarios of `bench/overhead.py`: one small setup function each, and the registry.

Adding a scenario: write `async def my_case(bench: Bench) -> Prepared` that starts its
worker with `bench.run_worker(...)` on `bench.task_queue("my-case")` and returns how to
start one run and how to check its result, then add a `Scenario` to `SCENARIOS` (with
`like_for_like=False` if it changes the work, so it is reported separately from the
floor comparison). Import heavy modules inside the function, not at the top.

Runs are started with plain JSON payloads (field names of `RunInput` as they exist today),
so the benchmark does not depend on the contracts' Python classes.

The scripted scenarios (`floor`, `ours`, ...) call no model at all: the product's scripted
model answers inside its LLM activity, without litellm. The provider-path scenarios
(`floor-provider`, `ours-provider`, `pydantic-ai-provider`, `openai-agents-provider`) call
the local OpenAI-compatible server (`bench/provider_server.py`, its own process), which
answers the same script over HTTP: the product through litellm's OpenAI provider
(`openai/bench-model` with `api_base`), each peer through its own OpenAI client.
"""

from __future__ import annotations

from typing import Any

from bench._harness import Bench, Prepared, Scenario
from bench.floor import PROVIDER_MODEL, floor, floor_provider, floor_provider_unsandboxed, floor_unsandboxed

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


async def ours_provider(bench: Bench) -> Prepared:
    """The same run with `openai/bench-model` on the local server, through litellm's OpenAI provider."""
    return await _ours(bench, "ours-provider", local_tools=False, provider_url=bench.require_provider_url())


async def _ours(
    bench: Bench, key: str, *, local_tools: bool, sandboxed: bool = False, provider_url: str | None = None
) -> Prepared:
    from activities.tools.calculator import calculator
    from activities.tools.tool_registry import ToolRegistry
    from hosting.connection import connect
    from worker import build_worker

    client = await connect(bench.address)
    queue = bench.task_queue(key)
    registry = ToolRegistry()
    registry.register(calculator, local=local_tools)
    await bench.run_worker(build_worker(client, task_queue=queue, registry=registry, sandboxed=sandboxed))
    run_input = react_run_input(["calculator"])
    if provider_url is not None:  # the server answers the script; the run carries none
        run_input["config"] = {
            "model": f"openai/{PROVIDER_MODEL}",
            "tools": ["calculator"],
            "max_iterations": TOOL_ROUNDS + 1,
            "model_settings": {"extra": {"api_base": provider_url}},
        }

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


async def pydantic_ai_provider(bench: Bench) -> Prepared:
    """pydantic-ai's `TemporalDurability` with its `OpenAIChatModel` against the local server."""
    from bench.peers.pydantic_ai_peer import durability_provider

    return await durability_provider(bench)


async def openai_agents_provider(bench: Bench) -> Prepared:
    """The OpenAI Agents SDK's plugin with `OpenAIChatCompletionsModel` against the local server."""
    from bench.peers.openai_agents_peer import (
        openai_agents_plugin_provider,  # pyright: ignore[reportMissingImports]
    )

    prepared: Prepared = await openai_agents_plugin_provider(bench)  # pyright: ignore[reportUnknownVariableType]
    return prepared


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
        Scenario(
            "floor-provider",
            "floor-provider: bare workflow, one AsyncOpenAI call + 1 no-op tool activity per iteration",
            floor_provider,
            floor="floor-provider",
        ),
        Scenario(
            "ours-provider",
            "ours-provider: ReActRun, openai/bench-model through litellm's OpenAI provider",
            ours_provider,
            floor="floor-provider",
        ),
        Scenario(
            "floor-provider-unsandboxed",
            "floor-provider, workflow outside the sandbox (what the sandbox costs)",
            floor_provider_unsandboxed,
            like_for_like=False,
            floor="floor-provider",
        ),
        Scenario(
            "pydantic-ai-provider",
            "pydantic-ai TemporalDurability, OpenAIChatModel",
            pydantic_ai_provider,
            floor="floor-provider",
        ),
        Scenario(
            "openai-agents-provider",
            "OpenAI Agents SDK + Temporal plugin, OpenAIChatCompletionsModel",
            openai_agents_provider,
            floor="floor-provider",
        ),
    )
}
"""Every scenario by key; `floor` is always measured, first."""

PROVIDER_SCENARIOS = ("floor-provider", "ours-provider", "floor-provider-unsandboxed")
DEFAULT_SCENARIOS = (
    "floor",
    "ours",
    "ours-local",
    "ours-sandboxed",
    "floor-unsandboxed",
    *PROVIDER_SCENARIOS,
)
PEERS_HERE = ("pydantic-ai", "pydantic-ai-agent", "pydantic-ai-provider")
PEERS_SECOND_ENV = ("openai-agents", "openai-agents-provider")
FLOORS = ("floor", "floor-provider")
"""The scenarios others are compared with; a floor is measured whenever a scenario names it."""
