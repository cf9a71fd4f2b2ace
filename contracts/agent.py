"""Agent configuration: model, settings, tools, limits and the scripted model's script."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, JsonValue

from conversation.policy import ContextPolicy

ScriptedError = Literal["rate_limit", "timeout", "auth", "server"]


class ModelSettings(BaseModel):
    """Sampling settings sent to the model.

    `extra` is passed to `litellm.acompletion` as keyword arguments (for example
    `api_base` for a local server). Secrets never go here: API keys are read by
    the LLM activity from the worker's environment, and keys that look like
    credentials are rejected when the run starts.
    """

    temperature: float | None = 0.2
    max_tokens: int | None = 4096
    top_p: float | None = None
    extra: dict[str, JsonValue] = {}


class ScriptToolCall(BaseModel):
    """A tool call the scripted model makes. `arguments` may be a raw (even malformed) string."""

    name: str
    arguments: dict[str, JsonValue] | str = {}
    id: str | None = None


class ScriptTurn(BaseModel):
    """One scripted LLM response, consumed one per LLM call, in order.

    `delay_s` is waited first; then, if `error` is set, the first `error_times`
    attempts of this call raise that provider error and later attempts answer.
    """

    content: str | None = None
    tool_calls: list[ScriptToolCall] = []
    thinking: str | None = None
    finish_reason: str | None = None
    delay_s: float = 0.0
    error: ScriptedError | None = None
    error_times: int = 1


class AgentConfig(BaseModel):
    """The agent: which model, what it may call, and the run's limits."""

    model: str
    model_settings: ModelSettings = ModelSettings()
    system_prompt: str | None = None
    tools: list[str] = []
    max_iterations: int = 10
    tool_timeout_s: float = 15.0
    tool_max_retries: int = 1
    tool_retry_backoff_s: float = 0.2
    tool_concurrency: int = 4
    tool_context: dict[str, JsonValue] = {}
    llm_timeout_s: float = 120.0
    llm_max_attempts: int = 5
    context_policy: ContextPolicy | None = None
    script: list[ScriptTurn] = []
