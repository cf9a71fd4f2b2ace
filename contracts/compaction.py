"""Payloads of compaction: the `compact` control and the `summarize` activity."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, StringConstraints

from contracts.agent import ModelSettings
from contracts.bounds import Id
from contracts.limits import MAX_MODEL_CHARS
from contracts.llm import Usage
from conversation import Message


class CompactInput(BaseModel):
    """`compact`: summarise the active lane (default op id: generated; default model: the agent's)."""

    op_id: Id | None = None
    model: Annotated[str, StringConstraints(max_length=MAX_MODEL_CHARS)] | None = None


class SummarizeRequest(BaseModel):
    """Summarise these messages (continuing `previous_summary`, if the lane had one)."""

    model: str
    messages: list[Message]
    previous_summary: str | None = None
    settings: ModelSettings = ModelSettings()
    timeout_s: float = 120.0


class SummarizeResult(BaseModel):
    """The summary text and what producing it cost."""

    summary: str
    usage: Usage = Usage()
