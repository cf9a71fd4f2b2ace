"""An LLM judge's model: a pydantic-ai model whose every call goes through the product's litellm path.

A dataset's `LLMJudge` names its model as a litellm model string (`openai/gpt-4o-mini`,
`anthropic/claude-...`); `judge_model` turns it into a pydantic-ai `FunctionModel` that sends the
judge's messages (and its output tool) to `activities.llm._litellm.acompletion`, so the worker's
keys, its provider settings and its error vocabulary apply. `unknown_judge_model` says why a
string is not a litellm model (None: it is one).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def unknown_judge_model(model: object) -> str | None:
    """Why `model` cannot judge (not a litellm model string), or None when it can."""
    if not isinstance(model, str) or not model.strip():
        return "an LLMJudge must name its model: a litellm model string, e.g. openai/gpt-4o-mini"
    from activities.llm import _litellm  # imports litellm: only when a dataset has a judge

    _litellm.configure()
    try:
        _litellm.litellm.get_llm_provider(model)
    except Exception:
        return f"unknown judge model {model!r}: use a litellm model string, e.g. openai/gpt-4o-mini"
    return None


def _openai_messages(messages: list[ModelMessage], info: AgentInfo) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if info.instructions:
        out.append({"role": "system", "content": info.instructions})
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append({"role": "system", "content": part.content})
                elif isinstance(part, UserPromptPart):
                    content = part.content if isinstance(part.content, str) else str(part.content)
                    out.append({"role": "user", "content": content})
        else:
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            out.append({"role": "assistant", "content": text})
    return out


def judge_model(model: str) -> FunctionModel:
    """A pydantic-ai model answering through litellm's `acompletion` with `model`."""

    async def call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from activities.llm import _litellm

        kwargs: dict[str, Any] = {"model": model, "messages": _openai_messages(messages, info)}
        if info.output_tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description or "",
                        "parameters": t.parameters_json_schema,
                    },
                }
                for t in info.output_tools
            ]
            kwargs["tool_choice"] = "required"
        response: Any = await _litellm.acompletion(kwargs)
        choice = response.choices[0].message
        calls: list[Any] = list(getattr(choice, "tool_calls", None) or [])
        if calls:
            parts: list[ToolCallPart] = []
            for c in calls:
                name: str = c.function.name
                arguments: str = c.function.arguments or "{}"
                parts.append(ToolCallPart(name, json.loads(arguments), str(c.id)))
            return ModelResponse(parts=list(parts), model_name=model)
        return ModelResponse(parts=[TextPart(choice.content or "")], model_name=model)

    return FunctionModel(call, model_name=model)
