"""The script both pydantic-ai peers run: the scripted model and the calculator tool.

Its own light module: the workflow sandbox imports the peers' workflow modules again for
every run, and they import only pydantic-ai (passed through) and this.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

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
