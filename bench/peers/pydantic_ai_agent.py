"""pydantic-ai's deprecated `TemporalAgent` wrapper: agent and workflow, as pydantic-ai documents them."""

from __future__ import annotations

import warnings

from pydantic_ai import Agent
from pydantic_ai.durable_exec import temporal as pydantic_ai_temporal
from pydantic_ai.models.function import FunctionModel
from temporalio import workflow

from bench.peers.pydantic_ai_script import calculator, scripted_model

WORKFLOW = "BenchPydanticAITemporalAgent"

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the deprecation warning; measuring it is the point
    agent = pydantic_ai_temporal.TemporalAgent(  # pyright: ignore[reportDeprecated]
        Agent(FunctionModel(scripted_model), name="bench_temporal_agent", tools=[calculator])
    )


@workflow.defn(name=WORKFLOW)
class TemporalAgentWorkflow(pydantic_ai_temporal.PydanticAIWorkflow):
    """Runs `agent`."""

    __pydantic_ai_agents__ = [agent]  # pyright: ignore[reportUnknownVariableType]

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent and return its output."""
        result = await agent.run(prompt)
        return result.output
