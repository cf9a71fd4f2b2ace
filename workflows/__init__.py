"""Temporal workflows. Deterministic code only: I/O happens in `activities/`."""

from workflows.agent_session import AgentSession
from workflows.react_run import ReActRun

__all__ = ["AgentSession", "ReActRun"]
