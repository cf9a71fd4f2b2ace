"""pydantic-ai's `TemporalDurability` capability: agent and workflow, as pydantic-ai documents them."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models.function import FunctionModel
from temporalio import workflow

from bench.peers.pydantic_ai_script import calculator, scripted_model

WORKFLOW = "BenchPydanticAIDurability"

agent = Agent(
    FunctionModel(scripted_model),
    name="bench_durability",
    tools=[calculator],
    capabilities=[TemporalDurability()],
)


@workflow.defn(name=WORKFLOW)
class DurabilityWorkflow(PydanticAIWorkflow):
    """Runs `agent`."""

    __pydantic_ai_agents__ = [agent]  # pyright: ignore[reportUnknownVariableType]

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent and return its output."""
        result = await agent.run(prompt)
        return result.output
