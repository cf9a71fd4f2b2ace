"""Input and output of the LLM activity."""

from __future__ import annotations

from pydantic import BaseModel, JsonValue

from contracts.agent import ModelSettings, ScriptTurn
from conversation import Message, ToolCall

SCRIPTED_MODEL = "scripted"


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] = {}


class ScriptedCall(BaseModel):
    """What the scripted model needs for one call: its turn (None past the script's end)."""

    index: int
    length: int
    turn: ScriptTurn | None = None


class Usage(BaseModel):
    """Token usage, summed across LLM calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_calls: int = 0

    def plus(self, other: Usage) -> Usage:
        """The sum of two usages."""
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            llm_calls=self.llm_calls + other.llm_calls,
        )


class LLMRequest(BaseModel):
    """One LLM call: the projected context and the tools, never any secret."""

    model: str
    system_prompt: str | None = None
    messages: list[Message]
    tools: list[ToolSpec] = []
    settings: ModelSettings = ModelSettings()
    timeout_s: float = 120.0
    request_id: str
    run_id: str
    iteration: int
    scripted: ScriptedCall | None = None


class LLMResponse(BaseModel):
    """The assistant's answer: text and/or tool calls, with usage and provider ids."""

    content: str = ""
    tool_calls: list[ToolCall] = []
    thinking: str | None = None
    finish_reason: str | None = None
    usage: Usage = Usage()
    response_id: str | None = None
    model: str | None = None


class CountTokensRequest(BaseModel):
    """Messages to count with the model's own tokenizer (`token_estimator: exact`)."""

    model: str
    messages: list[Message]
