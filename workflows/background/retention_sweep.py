"""The `RetentionSweep` workflow: one firing of the retention Schedule (`contracts.retention`).

It runs the `sweep_idle_threads` activity (`hosting.retention`), which erases the sessions idle
for longer than the input's `idle_s`, and ends with what it erased; its current details say so,
so the Web UI shows each sweep's count.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from contracts.activities import SWEEP_IDLE_THREADS
from contracts.decoding import PayloadProblem, decode_args
from contracts.retention import RETENTION_WORKFLOW_TYPE, RetentionInput, RetentionResult
from workflows.activity_calls import call_activity
from workflows.refusals import refusal


@workflow.defn(name=RETENTION_WORKFLOW_TYPE)
class RetentionSweep:
    """Erase the threads idle for too long."""

    @workflow.run
    async def run(self, *args: Any) -> RetentionResult:
        """Sweep once; what was erased."""
        try:
            sweep = decode_args(args, RetentionInput, "the sweep", required=True)
        except PayloadProblem as problem:
            raise refusal(problem) from None
        workflow.set_current_details(f"erasing threads idle for {sweep.idle_s:.0f} s")
        result = await call_activity(SWEEP_IDLE_THREADS, sweep)
        workflow.set_current_details(f"erased {result.erased} of {result.checked} idle threads")
        return result
