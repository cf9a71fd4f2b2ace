"""A workflow reporting which modules of the product its sandbox holds.

Used by `tests/worker/test_sandboxed_worker.py`.

It imports both product workflows as a worker does, so in the sandbox it sees every module
they need; the test compares them with the worker's own modules.
"""

from __future__ import annotations

import sys

from temporalio import workflow

import workflows.run.react_run
import workflows.session.agent_session

IMPORTED_AS_A_WORKER_DOES = (workflows.session.agent_session.AgentSession, workflows.run.react_run.ReActRun)


@workflow.defn(name="SandboxModuleProbe")
class SandboxModuleProbe:
    """Reports the identity of each loaded module of the given packages."""

    @workflow.run
    async def run(self, packages: list[str]) -> dict[str, int]:
        """`id()` of every module of `packages` in this run's `sys.modules`."""
        loaded = dict(sys.modules)
        return {name: id(module) for name, module in loaded.items() if name.split(".")[0] in packages}
