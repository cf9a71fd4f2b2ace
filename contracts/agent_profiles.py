"""Payloads of `resolve_agents`: agent profiles registered on the worker, by name."""

from __future__ import annotations

from pydantic import BaseModel

from contracts.agent import AgentConfig


class ResolveAgentsRequest(BaseModel):
    """Profile names a run offers as agents; the worker answers with each profile."""

    names: list[str]


class AgentProfile(BaseModel):
    """A named agent registered on the worker: what the model reads of it, and its config."""

    name: str
    description: str = ""
    config: AgentConfig


AGENT_CHECK_WORKFLOW_TYPE = "AgentConfigCheck"
"""Checks a config against the worker's tools and profiles (`workflows.background.agent_check`)."""


class AgentCheckResult(BaseModel):
    """What the worker found wrong with a config, by code (`unknown_tool`, `unknown_agent`); none: usable."""

    code: str | None = None
    message: str | None = None
