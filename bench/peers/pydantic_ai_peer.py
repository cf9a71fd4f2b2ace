"""Peer: pydantic-ai on Temporal, with its own test model (`FunctionModel`, no network).

The same work as the other scenarios: 10 rounds of one `calculator` call, then the final
answer (11 model-request activities and 10 tool activities). Measured in both of
pydantic-ai's forms, each in its own module as pydantic-ai documents it (agent and workflow
at module level): `TemporalDurability` (`pydantic_ai_durability.py`) and the deprecated
`TemporalAgent` (`pydantic_ai_agent.py`). The workflow sandbox imports those modules again
for every run, so they import only pydantic-ai (passed through) and the light
`pydantic_ai_script.py` (the scripted model and the tool).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from bench.peers.pydantic_ai_script import FINAL_ANSWER, QUERY

if TYPE_CHECKING:
    from bench._harness import Bench, Prepared


def _check(result: Any) -> str | None:
    return None if result == FINAL_ANSWER else f"answered {result!r}, not {FINAL_ANSWER!r}"


async def _prepared(bench: Bench, workflow_class: type, name: str, key: str, label: str) -> Prepared:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench._harness import Prepared

    client = await Client.connect(bench.address, plugins=[PydanticAIPlugin()])
    queue = bench.task_queue(key)
    await bench.run_worker(Worker(client, task_queue=queue, workflows=[workflow_class]))

    async def start(workflow_id: str) -> Any:
        return await client.start_workflow(name, QUERY, id=workflow_id, task_queue=queue)

    return Prepared(start=start, check=_check, label=f"{label} {version('pydantic-ai-slim')}")


async def durability(bench: Bench) -> Prepared:
    """The `TemporalDurability` scenario."""
    from bench.peers.pydantic_ai_durability import WORKFLOW, DurabilityWorkflow

    return await _prepared(
        bench, DurabilityWorkflow, WORKFLOW, "pydantic-ai", "pydantic-ai TemporalDurability"
    )


async def temporal_agent(bench: Bench) -> Prepared:
    """The deprecated `TemporalAgent` scenario."""
    from bench.peers.pydantic_ai_agent import WORKFLOW, TemporalAgentWorkflow

    return await _prepared(
        bench, TemporalAgentWorkflow, WORKFLOW, "pydantic-ai-agent", "pydantic-ai TemporalAgent"
    )


async def durability_provider(bench: Bench) -> Prepared:
    """The `TemporalDurability` scenario with `OpenAIChatModel` against the local server."""
    import os

    os.environ["BENCH_PROVIDER_URL"] = bench.require_provider_url()  # read by the module below
    from bench.peers.pydantic_ai_provider import WORKFLOW, ProviderWorkflow

    return await _prepared(
        bench,
        ProviderWorkflow,
        WORKFLOW,
        "pydantic-ai-provider",
        "pydantic-ai TemporalDurability + OpenAIChatModel",
    )
