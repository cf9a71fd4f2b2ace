"""The session's memo, written for listings (`contracts.session_memo`): title, last use, last request.

Temporal holds the memo (visibility answers it without a worker or a history read) and carries
it through continue-as-new; the session only upserts it, and reads back whether it has a title.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from contracts.run import RunStatus
from contracts.session import RequestRecord
from contracts.session_memo import LAST_REQUEST_MEMO, LAST_USED_MEMO, TITLE_MEMO, title_from

__all__ = ["rename", "request_ended"]


def request_ended(record: RequestRecord, status: RunStatus) -> None:
    """Upsert the memo as a request ends: its id and status, the time, and a title if none yet.

    One upsert command, as before titles were kept (patch `run-end-memo`): replays of older
    histories see the same command.
    """
    memo: dict[str, Any] = {
        LAST_REQUEST_MEMO: {"id": record.request_id, "status": status},
        LAST_USED_MEMO: workflow.now().isoformat(),
    }
    if workflow.memo_value(TITLE_MEMO, None) is None:
        title = title_from(record.query_preview)
        if title is not None:
            memo[TITLE_MEMO] = title
    workflow.upsert_memo(memo)


def rename(title: str) -> None:
    """Name the thread: its listings show `title` from now on (a checked `ThreadTitle`)."""
    workflow.upsert_memo({TITLE_MEMO: title})
