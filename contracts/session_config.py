"""Payloads of a session's config controls (they change the config for the next run)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, JsonValue, StringConstraints

from contracts.agent import ModelSettings, ToolName
from contracts.bounds import json_size_at_most
from contracts.limits import MAX_MODEL_CHARS, MAX_SYSTEM_PROMPT_CHARS, MAX_TOOL_CONTEXT_BYTES
from contracts.webhooks import WebhookUrl


class SystemPromptInput(BaseModel):
    """`set_system_prompt`: the base prompt for the next run (None clears it)."""

    system_prompt: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_PROMPT_CHARS)] | None = None


class ToolNameInput(BaseModel):
    """`register_tool` / `unregister_tool`."""

    name: ToolName


class ToolContextInput(BaseModel):
    """`set_tool_context`: what tools that take a `tool_context` argument receive."""

    tool_context: Annotated[
        dict[str, JsonValue], json_size_at_most(MAX_TOOL_CONTEXT_BYTES, "tool_context")
    ] = {}


class ModelInput(BaseModel):
    """`set_model`: the model (and optionally its settings) for the next run."""

    model: Annotated[str, StringConstraints(max_length=MAX_MODEL_CHARS)]
    model_settings: ModelSettings | None = None


class WebhookInput(BaseModel):
    """`set_webhook`: the session's default webhook, for the requests asked from now on (None clears it).

    The client checks it against the deployment's allow-list (`REACT_WEBHOOK_ALLOW`) before it
    is sent; the worker checks every address again where it delivers.
    """

    webhook_url: WebhookUrl | None = None
