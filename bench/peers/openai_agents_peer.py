"""Peer: the OpenAI Agents SDK with Temporal's plugin (`temporalio.openai_agents`), test model, no network.

Runs only in the second environment that `bench/peers/second_env.py` creates (it needs
openai >= 3, which litellm 1.106 forbids). The same work as the other scenarios: 10 rounds
of one `calculator` call (a Temporal activity as a tool), then the final answer. The SDK's
trace export (to OpenAI's servers) is disabled: no network.

`openai-agents-provider` runs the same workflow with the SDK's own Chat Completions model
(`OpenAIChatCompletionsModel` on an `AsyncOpenAI` client) against the local
OpenAI-compatible server (`bench/provider_server.py`), which answers the same script.
"""

from __future__ import annotations

import os

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from datetime import timedelta
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from agents import (
    Agent,
    Model,
    ModelProvider,
    ModelResponse,
    OpenAIChatCompletionsModel,
    Runner,
    set_tracing_disabled,
)
from temporalio import activity, workflow
from temporalio.openai_agents import OpenAIAgentsPlugin
from temporalio.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider
from temporalio.openai_agents.workflow import activity_as_tool

if TYPE_CHECKING:  # the sandbox imports this module again for every run: keep it light
    from bench._harness import Bench, Prepared

set_tracing_disabled(True)

TOOL_ROUNDS = 10
FINAL_ANSWER = "The answer is 70."
QUERY = "What is 10 * 7? Use the calculator for every step."
WORKFLOW = "BenchOpenAIAgents"


def _item_type(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)  # pyright: ignore[reportUnknownMemberType]


class ScriptedModel(TestModel):
    """One calculator call per round until `TOOL_ROUNDS` results are in the input, then the answer."""

    def __init__(self) -> None:
        super().__init__(lambda: ResponseBuilders.output_message(FINAL_ANSWER))

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        """The next scripted response, from the tool results already in `input`."""
        items: list[Any] = [] if isinstance(input, str) else list(input)
        results = sum(_item_type(item) == "function_call_output" for item in items)
        if results < TOOL_ROUNDS:
            arguments = f'{{"expression": "{results + 1} * 7"}}'
            return ResponseBuilders.tool_call(arguments, "calculator", call_id=f"call-{results}")
        return ResponseBuilders.output_message(FINAL_ANSWER)


@activity.defn
async def calculator(expression: str) -> str:
    """Multiply two integers.

    Args:
        expression: `a * b`.
    """
    left, _, right = expression.partition("*")
    return str(int(left) * int(right))


@workflow.defn(name=WORKFLOW)
class OpenAIAgentsWorkflow:
    """Runs one agent with the calculator activity as its tool."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent and return its final output."""
        agent = Agent[None](
            name="bench",
            instructions="Use the calculator for every step.",
            tools=[activity_as_tool(calculator, start_to_close_timeout=timedelta(seconds=30))],
        )
        result = await Runner.run(agent, prompt, max_turns=TOOL_ROUNDS + 5)
        return str(result.final_output)


def _check(result: Any) -> str | None:
    return None if result == FINAL_ANSWER else f"answered {result!r}, not {FINAL_ANSWER!r}"


class LocalServerProvider(ModelProvider):
    """Every agent gets `OpenAIChatCompletionsModel` on one `AsyncOpenAI` client for the local server."""

    def __init__(self, base_url: str) -> None:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=base_url, api_key="sk-bench-loopback", max_retries=0)
        self._model = OpenAIChatCompletionsModel(model="bench-model", openai_client=client)

    def get_model(self, model_name: str | None) -> Model:
        """The one model, whatever the name."""
        return self._model


async def openai_agents_plugin(bench: Bench) -> Prepared:
    """The OpenAI Agents SDK scenario: the plugin on the client, the calculator activity on the worker."""
    return await _plugin_scenario(bench, "openai-agents", TestModelProvider(ScriptedModel()), "")


async def openai_agents_plugin_provider(bench: Bench) -> Prepared:
    """The same with `OpenAIChatCompletionsModel` against the local OpenAI-compatible server."""
    provider = LocalServerProvider(bench.require_provider_url())
    return await _plugin_scenario(bench, "openai-agents-provider", provider, ", OpenAIChatCompletionsModel")


async def _plugin_scenario(
    bench: Bench, key: str, model_provider: ModelProvider, model_label: str
) -> Prepared:
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench._harness import Prepared

    plugin = OpenAIAgentsPlugin(model_provider=model_provider)
    client = await Client.connect(bench.address, plugins=[plugin])
    queue = bench.task_queue(key)
    await bench.run_worker(
        Worker(client, task_queue=queue, workflows=[OpenAIAgentsWorkflow], activities=[calculator])
    )

    async def start(workflow_id: str) -> Any:
        return await client.start_workflow(WORKFLOW, QUERY, id=workflow_id, task_queue=queue)

    label = (
        f"OpenAI Agents SDK {version('openai-agents')} + temporalio-openai-agents "
        f"{version('temporalio-openai-agents')}{model_label}"
    )
    return Prepared(start=start, check=_check, label=label)
