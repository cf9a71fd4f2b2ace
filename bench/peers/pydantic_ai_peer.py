"""Peer: pydantic-ai on Temporal, with its own test model (`FunctionModel`, no network).

The same work as the other scenarios: 10 rounds of one `calculator` call, then the final
answer (11 model-request activities and 10 tool activities). Measured in both of
pydantic-ai's forms, each in its own module as pydantic-ai documents it (agent and workflow
at module level): `TemporalDurability` (`pydantic_ai_durability.py`) and the deprecated
`TemporalAgent` (`pydantic_ai_agent.py`). The workflow sandbox imports those modules again
for every run, so they import only pydantic-ai (passed through) and this light module.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

if TYPE_CHECKING:
    from bench._harness import Bench, Prepared

TOOL_ROUNDS = 10
FINAL_ANSWER = "The answer is 70."
QUERY = "What is 10 * 7? Use the calculator for every step."


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One calculator call per round until `TOOL_ROUNDS` results are in, then the answer."""
    results = sum(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)
    if results < TOOL_ROUNDS:
        call = ToolCallPart(
            "calculator", {"expression": f"{results + 1} * 7"}, tool_call_id=f"call-{results}"
        )
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(FINAL_ANSWER)])


async def calculator(expression: str) -> str:
    """Multiply two integers.

    Args:
        expression: `a * b`.
    """
    left, _, right = expression.partition("*")
    return str(int(left) * int(right))


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
