"""Starting a session from a snapshot token, verified by an activity (the worker holds the secret).

The restored lane is applied as a `replace` op with reason `restore`. A bad token
fails the session with a named error (`snapshot_*`); the ask that created the
session gets that error instead of a request id.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from contracts.activities import RESTORE_SNAPSHOT
from contracts.session import SessionInput
from contracts.snapshot import RestoreSnapshotRequest
from contracts.workflow_ids import bounded_id
from conversation import ContextOpPayload
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.session.thread import SessionThread


async def restore_snapshot(session: SessionInput, thread: SessionThread) -> ApplicationError | None:
    """Apply `session.snapshot` to `thread`; return the error that fails the session, if any."""
    assert session.snapshot is not None
    try:
        payload = await call_activity(RESTORE_SNAPSHOT, RestoreSnapshotRequest(token=session.snapshot))
    except ActivityError as err:
        error = run_error(err)
        return ApplicationError(error.message, type=error.type, non_retryable=True)
    op = ContextOpPayload.model_validate(
        {
            "op_id": bounded_id(f"restore:{workflow.info().workflow_id}", ""),
            "context_ref": payload.context_ref,
            "operation": {
                "type": "replace",
                "reason": "restore",
                "result_context": payload.context,
                "meta": {"agent_id": payload.agent_id, "exported_at": payload.exported_at.isoformat()},
            },
        }
    )
    thread.restore(op)
    return None
