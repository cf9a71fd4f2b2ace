"""Listing threads from Temporal's visibility: a principal's own, or every principal's for the admin.

One query and one filter for both views: a listed session's id must parse as its owner's
(`gateway.owners.parse_session_id`), whatever the visibility store makes of `_` in a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.session import SESSION_WORKFLOW_TYPE
from gateway.context import GatewayContext
from gateway.identity.principal import PRINCIPAL_PATTERN, Principal
from gateway.owners import PREFIX, parse_session_id

__all__ = ["MAX_LISTED", "ListedThread", "list_threads"]

MAX_LISTED = 100
"""The most threads one listing returns."""


@dataclass(frozen=True)
class ListedThread:
    """One session of a listing: whose it is, its agent and thread, where it stands."""

    principal: str
    agent: str
    thread_id: str
    session_id: str
    status: str
    started_at: str

    def json(self, *, with_principal: bool) -> dict[str, str]:
        """The listing's JSON object (`principal` only in the admin's listing of every principal)."""
        owner = {"principal": self.principal} if with_principal else {}
        return {
            **owner,
            "agent": self.agent,
            "thread_id": self.thread_id,
            "session_id": self.session_id,
            "status": self.status,
            "started_at": self.started_at,
        }


async def list_threads(ctx: GatewayContext, owner: str | None) -> list[ListedThread]:
    """The sessions of the principal named `owner` (every principal's when None), at most `MAX_LISTED`.

    `owner` must match `PRINCIPAL_PATTERN` (names match `^[A-Za-z0-9_.-]+$`: safe inside the
    query's quotes).
    """
    prefix = f"{PREFIX}/{owner}/" if owner is not None else f"{PREFIX}/"
    query = (
        f"WorkflowType = '{SESSION_WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '{prefix}' "
        "AND ExecutionStatus != 'ContinuedAsNew'"
    )
    listed: dict[str, ListedThread] = {}
    async for execution in ctx.client.list_workflows(query, limit=MAX_LISTED):
        name = execution.id.split("/")[1] if execution.id.count("/") >= 3 else ""
        if not PRINCIPAL_PATTERN.fullmatch(name) or (owner is not None and name != owner):
            continue
        owned = parse_session_id(Principal(name), execution.id)
        if owned is None or execution.id in listed:
            continue
        listed[execution.id] = ListedThread(
            principal=name,
            agent=owned[0],
            thread_id=owned[1],
            session_id=execution.id,
            status=execution.status.name.lower() if execution.status else "unknown",
            started_at=execution.start_time.isoformat(),
        )
    return list(listed.values())
