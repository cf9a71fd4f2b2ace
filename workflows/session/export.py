"""Exporting one lane of a session's conversation as a signed snapshot token (an activity signs it).

The worker holds the signing secret, so the token is made by the `export_snapshot`
activity; a refusal (`snapshot_secret_*`) comes back as the Update's named error.
"""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError

from contracts.activities import EXPORT_SNAPSHOT
from contracts.session import ExportInput, ExportResult
from contracts.snapshot import ExportSnapshotRequest
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.session.thread import SessionThread


async def export_lane(agent_id: str, thread: SessionThread, request: ExportInput) -> ExportResult:
    """A token of `request.context_ref`'s lane (default: the active lane), or the named error."""
    lane = request.context_ref or thread.active_context_ref
    try:
        return await call_activity(
            EXPORT_SNAPSHOT,
            ExportSnapshotRequest(
                agent_id=agent_id,
                context_ref=lane,
                context=thread.lane(lane),
                ttl_s=request.ttl_s,
            ),
        )
    except ActivityError as err:
        error = run_error(err)
        raise ApplicationError(error.message, type=error.type) from None
