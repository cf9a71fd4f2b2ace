"""How the worker runs workflow code: outside Temporal's sandbox by default, or inside it.

The product's workflow code lives in `WORKFLOW_PACKAGES`; what keeps it deterministic is
checked by `tests/test_workflow_rules.py` and the replay tests.
"""

from __future__ import annotations

from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

WORKFLOW_PACKAGES = ("workflows", "contracts", "conversation")
"""The packages workflow code runs: deterministic by rule (`tests/test_workflow_rules.py`)."""


def workflow_runner(*, sandboxed: bool = False) -> WorkflowRunner:
    """How the worker runs workflow code: directly (the default), or in Temporal's full sandbox.

    Users do not write workflow code here: the product's workflows are the only ones,
    and what keeps them deterministic is checked on every test run, not at run time:
    `tests/test_workflow_rules.py` (no I/O, clocks, randomness, threads or environment in
    `WORKFLOW_PACKAGES`), the replay tests (recorded histories replay, in the sandbox and
    out of it), and a worker that caches no workflows in every other test (each task
    replays the run from its start). The sandbox's run-time checks add little to these
    in production, while it costs about 4 ms of worker CPU per iteration (it re-enters
    the sandbox for every payload of every workflow task; bench/README.md). `sandboxed=True`
    turns Temporal's full sandbox on, every module re-imported per run and every call
    policed: the setting to use while changing workflow code.
    """
    return SandboxedWorkflowRunner() if sandboxed else UnsandboxedWorkflowRunner()
