"""How the worker runs workflow code: outside Temporal's sandbox by default, or inside it.

The product's workflow code lives in `WORKFLOW_PACKAGES`; what keeps it deterministic is
checked by `tests/project/test_workflow_rules.py` and the replay tests.
"""

from __future__ import annotations

from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

WORKFLOW_PACKAGES = ("workflows", "contracts", "conversation")
"""The packages workflow code runs: deterministic by rule (`tests/project/test_workflow_rules.py`)."""

SHARED_WITH_THE_SANDBOX = ("contracts.decoding",)
"""The product modules the sandbox passes through instead of importing them again per run.

Only `contracts.decoding`: the payload converter, which lives outside the sandbox, hands
handlers its `Undecodable` marker, and `decode_args` must recognise that very class. It
keeps no state. Every other module of `WORKFLOW_PACKAGES` is imported afresh in each run's
sandbox and policed there.
"""

LOGGING_LIBRARIES = ("litellm", "openai", "httpx")
"""Libraries passed through because a log call may import them inside the sandbox.

Workflow code never imports them. But once the worker has loaded litellm, litellm's filter on
the root logger's handlers runs for every log record, in whatever thread logs. The filter
imports `litellm` lazily. A record logged while a sandbox imports or runs workflow code (the
event loop's exception handler, say) then imported litellm, openai and httpx afresh inside the
sandbox. That failed on httpx's `urllib.request.Request` subclass and failed the worker's
validation of `ReActRun` (seen in a full test run). Passed through, the import finds the
modules the worker already loaded.
"""

SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(
    *SHARED_WITH_THE_SANDBOX, *LOGGING_LIBRARIES
)
"""Temporal's default restrictions, plus `SHARED_WITH_THE_SANDBOX` and `LOGGING_LIBRARIES`.

The defaults pass through the standard library, temporalio, protobuf, grpc, pydantic,
pydantic_core, annotated_types and a few more libraries Temporal names. Workflow code imports
no other library (`tests/project/test_workflow_rules.py`).
"""


def workflow_runner(*, sandboxed: bool = False) -> WorkflowRunner:
    """How the worker runs workflow code: directly (the default), or in Temporal's sandbox.

    Users do not write workflow code here: the product's workflows are the only ones,
    and what keeps them deterministic is checked on every test run, not at run time:
    `tests/project/test_workflow_rules.py` (no I/O, clocks, randomness, threads, environment or
    mutable module state in `WORKFLOW_PACKAGES`), the replay tests (recorded histories
    replay, in the sandbox and out of it), and a worker that caches no workflows in every
    other test (each task replays the run from its start).

    `sandboxed=True` is the setting to use while changing workflow code. Each workflow run
    then gets its own copy of every module of `WORKFLOW_PACKAGES` (but
    `SHARED_WITH_THE_SANDBOX`), imported afresh, so no module state leaks between runs;
    and every call that Temporal's default restrictions forbid (clocks such as
    `datetime.now` and `time.time`, `random`, `os.environ` and the other process state,
    files, sockets, subprocesses, threads) fails the workflow task with
    `RestrictedWorkflowAccessError`, naming the call. What it does not police: code inside
    the modules it passes through (`SANDBOX_RESTRICTIONS`) and C extensions. It costs worker
    CPU on every workflow task (bench/README.md), so production runs without it.
    """
    if not sandboxed:
        return UnsandboxedWorkflowRunner()
    return SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)
