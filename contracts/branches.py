"""A conversation's branches: the forks an edit or a regenerate made, recorded by the family's root session.

A *family* is a conversation with its branches: its root is the session the conversation
started as (the session a chat id names); each edit or regenerate forks the family's newest
branch (its *head*) before a user message and asks again there, and the root records the
new branch (`record_branch`, an Update of the root): the root owns the list, and its last
entry is the head. A branch names its root in `ForkOrigin.branch_of`. docs/branches.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, StringConstraints

from contracts.bounds import Id
from contracts.workflow_ids import SessionId

MAX_BRANCHES = 100
"""The branches a family's root records (one more is refused, `invalid_input`: fork by hand instead)."""
BRANCH_TEXT_CHARS = 200
"""The characters of a branch's first message the root keeps (its preview, like a request's)."""

BranchKind = Literal["regenerate", "edit"]


class Branch(BaseModel):
    """One branch of a family: where it forks and what it asked first.

    The branch `session_id` forked from session `parent_id` after that thread's entry `seq`
    (-1: before its first entry), in place of the user message at `message_seq` there (the
    one request `request_id` asked); its first ask is `text` (a regenerate: the same
    message; an edit: the edited one), asked as request `asked_request_id`.
    """

    session_id: SessionId
    parent_id: SessionId
    seq: int
    message_seq: int
    request_id: Id
    asked_request_id: Id
    kind: BranchKind
    text: Annotated[str, StringConstraints(max_length=BRANCH_TEXT_CHARS)]


class BranchList(BaseModel):
    """Answer of the root's `branches` query: the root's id and its branches, oldest first (last: head)."""

    root_id: str
    branches: list[Branch] = []
