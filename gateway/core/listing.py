"""Listing threads from Temporal's visibility: a principal's own, or every principal's for the admin.

One query and one filter for both views: a listed session's id must parse as its owner's
(`gateway.owners.parse_session_id`), whatever the visibility store makes of `_` in a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from temporalio.client import WorkflowExecution

from contracts.session import SESSION_WORKFLOW_TYPE
from contracts.session_memo import LAST_USED_MEMO, TITLE_MEMO
from gateway.context import GatewayContext
from gateway.identity.principal import PRINCIPAL_PATTERN, Principal
from gateway.owners import PREFIX, parse_session_id

__all__ = ["MAX_LISTED", "ListedThread", "list_threads"]

MAX_LISTED = 100
"""The most threads one listing returns."""


@dataclass(frozen=True)
class ListedThread:
    """One session of a listing: whose it is, its agent and thread, where it stands, its title.

    `title` and `last_used_at` come from the session's memo (`contracts.session_memo`): None
    until its first request ends (and for sessions older than titles).
    """

    principal: str
    agent: str
    thread_id: str
    session_id: str
    status: str
    started_at: str
    title: str | None = None
    last_used_at: str | None = None

    def json(self, *, with_principal: bool) -> dict[str, str | None]:
        """The listing's JSON object (`principal` only in the admin's listing of every principal)."""
        owner = {"principal": self.principal} if with_principal else {}
        return {
            **owner,
            "agent": self.agent,
            "thread_id": self.thread_id,
            "session_id": self.session_id,
            "status": self.status,
            "started_at": self.started_at,
            "title": self.title,
            "last_used_at": self.last_used_at,
        }


async def list_threads(ctx: GatewayContext, owner: str | None) -> list[ListedThread]:
    """The sessions of the principal named `owner` (every principal's when None), at most `MAX_LISTED`.

    The most recently used first (`last_used_at`, else `started_at`).

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
            title=await _memo_text(execution, TITLE_MEMO),
            last_used_at=await _memo_text(execution, LAST_USED_MEMO),
        )
    return sorted(listed.values(), key=_last_touched, reverse=True)


def _last_touched(thread: ListedThread) -> datetime:
    """When the thread was last used (its start, before its first request ends): listings' order."""
    return datetime.fromisoformat(thread.last_used_at or thread.started_at)


async def _memo_text(execution: WorkflowExecution, key: str) -> str | None:
    """A text value of the session's memo, or None (absent, or not text)."""
    value: object = await execution.memo_value(key, None)
    return value if isinstance(value, str) else None
