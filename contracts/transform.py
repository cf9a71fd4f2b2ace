"""The request transformer: a function registered on the worker that may change the next LLM request.

`AgentConfig.request_transformer` names it. Before every LLM call the run sends it a
`TransformInput` (where the run stands and the request it is about to send, its
messages inline) and applies the `RequestChanges` it returns; each change is recorded
in the trace (`request_transformed`), so a person can see why a call differed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from contracts.agent import ModelSettings, ToolName
from contracts.limits import MAX_MODEL_CHARS, MAX_SYSTEM_PROMPT_CHARS, MAX_TOOLS
from contracts.llm import Usage
from conversation import Message
from conversation.messages import OmitDefaults


class TransformInput(BaseModel):
    """What a transformer sees: the run's progress and the request about to be sent."""

    transformer: str
    request_id: str
    iteration: int
    llm_calls: int
    usage: Usage
    model: str
    settings: ModelSettings
    system_prompt: str | None = None
    tools: list[str] = []
    messages: list[Message] = []


class RequestChanges(OmitDefaults):
    """What a transformer changes; a field left out (None) keeps the request's.

    `tools` may only name tools the agent config offers (a subset: a transformer
    cannot grant tools); `reason` is shown in the trace.
    """

    model: Annotated[str, StringConstraints(min_length=1, max_length=MAX_MODEL_CHARS)] | None = None
    settings: ModelSettings | None = None
    system_prompt: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_PROMPT_CHARS)] | None = None
    tools: Annotated[list[ToolName], Field(max_length=MAX_TOOLS)] | None = None
    messages: list[Message] | None = None
    reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None
