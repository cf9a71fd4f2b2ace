"""pydantic-ai's `TemporalDurability` with its `OpenAIChatModel`, against the local OpenAI-compatible server.

The provider-path peer: the same agent as `pydantic_ai_durability.py`, but its model is
pydantic-ai's own OpenAI client (`OpenAIChatModel` with `OpenAIProvider(base_url=...)`)
talking to `bench/provider_server.py`, which answers the same script over HTTP. The
server's URL comes from `PROVIDER_URL_ENV`, set by the scenario before this module is first
imported: the sandbox imports it again for every run, and module-level code may read the
environment at import time.
"""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from temporalio import workflow

from bench.peers.pydantic_ai_script import calculator

WORKFLOW = "BenchPydanticAIProvider"
PROVIDER_URL_ENV = "BENCH_PROVIDER_URL"
PROVIDER_KEY = "sk-bench-loopback"

agent = Agent(
    OpenAIChatModel(
        "bench-model",
        provider=OpenAIProvider(
            base_url=os.environ.get(PROVIDER_URL_ENV, "http://127.0.0.1:9/v1"), api_key=PROVIDER_KEY
        ),
    ),
    name="bench_provider",
    tools=[calculator],
    capabilities=[TemporalDurability()],
)


@workflow.defn(name=WORKFLOW)
class ProviderWorkflow(PydanticAIWorkflow):
    """Runs `agent`."""

    __pydantic_ai_agents__ = [agent]  # pyright: ignore[reportUnknownVariableType]

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent and return its output."""
        result = await agent.run(prompt)
        return result.output
