"""Temporal workflows. Deterministic code only: I/O happens in `activities/`."""

from workflows.react_run import ReActRun

__all__ = ["ReActRun"]
