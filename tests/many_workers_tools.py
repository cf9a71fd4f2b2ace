"""A tool for tests/worker/test_many_workers.py: holds a call on its first worker until that worker is killed.

`worker.py --tools tests.many_workers_tools` registers it next to the other test tools.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from activities.tools.tool_registry import ToolRegistry

GATE_DIR_ENV = "REACT_TEST_GATE_DIR"
"""The folder where each held call leaves a file named by its label, holding its worker's pid."""


async def hold_until_retried(label: str) -> str:
    """Hold the first execution of this call until its worker dies; a later execution answers at once.

    Args:
        label: names the call (a file name: letters, digits, dashes).
    """
    gate = Path(os.environ[GATE_DIR_ENV]) / label
    if gate.exists():
        return f"released {label} by worker {os.getpid()}"
    partial = gate.with_suffix(".partial")
    partial.write_text(str(os.getpid()))
    partial.rename(gate)  # whole or absent for a reader
    await asyncio.Event().wait()  # heartbeats go on meanwhile: only the worker's death ends this attempt
    raise AssertionError("unreachable")


def register(registry: ToolRegistry) -> None:
    """Add `hold_until_retried`."""
    registry.register(hold_until_retried)
