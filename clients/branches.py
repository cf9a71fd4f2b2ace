"""Edit and regenerate, mapped onto fork: a new branch of a conversation (docs/branches.md).

A *family* is a conversation and its branches. Its root is the session it started as; each
branch is a fork of the family's newest branch (its *head*, `SessionStatus.head` of the root)
before one of its user messages, which asks again there: the same message (a regenerate) or
an edited one (an edit). The root records each branch (`record_branch`), so the family's
branches are listed in one read and the head is known; the branch names its root
(`ForkOrigin.branch_of`). The original stays as it was: readable, and a fork of its own.

A message is named by its seq in the thread (an int) or by the id of the request that asked it
(a str: the AI SDK's user message id; the answer's id is `<request id>:answer`). Refusals come
before anything is forked: `unknown_message` (no such user message), `nothing_to_regenerate`
(no request yet), `busy` (a request runs or waits: the thread would move under the fork),
`invalid_input` / `payload_too_large` for the edited text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from clients.errors import RejectedError
from clients.inputs import not_blank
from contracts.branches import BRANCH_TEXT_CHARS, Branch, BranchKind
from contracts.errors import BUSY, NOTHING_TO_REGENERATE, PAYLOAD_TOO_LARGE, UNKNOWN_MESSAGE
from contracts.limits import MAX_QUERY_CHARS
from contracts.session import AskAccepted, ForkInput, ForkResult, RequestRecord, SessionStatus
from conversation import Entry, MessageEntry
from conversation.attachments import Attachment

__all__ = [
    "BranchPoint",
    "Branched",
    "MessageRef",
    "edit_point",
    "family_root",
    "find_user_message",
    "regenerate_point",
    "start_branch",
    "unknown_message",
    "user_message",
]

MessageRef = int | str
"""A user message of a thread: its seq, or the id of the request that asked it."""


class SessionHandle(Protocol):
    """What a branch needs of a session's handle (`clients.session_handle.SessionHandle` has it)."""

    @property
    def workflow_id(self) -> str:
        """The session's id."""
        ...

    async def status(self) -> SessionStatus:
        """The session's status."""
        ...

    async def requests(self) -> list[RequestRecord]:
        """The session's request records."""
        ...

    def thread(self, since_seq: int = 0) -> AsyncIterator[Entry]:
        """The thread's entries from `since_seq` on."""
        ...

    async def fork(self, request: ForkInput | None = None) -> ForkResult:
        """Fork the session."""
        ...


@dataclass(frozen=True)
class BranchPoint:
    """Where a branch forks and what it asks: after entry `seq` of `parent_id`, in place of `message_seq`.

    `request_id` asked the replaced message; `text` is what the branch asks; `root_id` is the
    family's root, which records the branch; `replaced` is the replaced message's text;
    `attachments` are the replaced message's files, which a regenerate asks again (and an edit
    through the typed client keeps: it edits the text).
    """

    root_id: str
    parent_id: str
    seq: int
    message_seq: int
    request_id: str
    text: str
    replaced: str
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class Branched:
    """A branch an edit or a regenerate made, and what its session did with the ask."""

    branch: Branch
    accepted: AskAccepted


def family_root(status: SessionStatus, session_id: str) -> str:
    """The root of the family session `session_id` (with `status`) belongs to: its own id unless a branch."""
    origin = status.forked_from
    return origin.branch_of if origin is not None and origin.branch_of else session_id


async def regenerate_point(session: SessionHandle, request_id: str | None = None) -> BranchPoint:
    """Where a regenerate of request `request_id` (default: the thread's last request) branches.

    Raises:
        RejectedError: `busy`, `nothing_to_regenerate` (no request yet), `unknown_message` (no
            user message of `request_id` in the thread).
    """
    status = await _idle(session)
    if request_id is None:
        records = await session.requests()
        if not records:
            raise RejectedError(NOTHING_TO_REGENERATE, "the thread has no answered request to regenerate")
        request_id = records[-1].request_id
    entry = await user_message(session, request_id)
    return _point(session, status, entry, entry.payload.content)


async def edit_point(session: SessionHandle, message: MessageRef, text: str) -> BranchPoint:
    """Where an edit of user message `message` (its seq, or its request's id) to `text` branches.

    Raises:
        RejectedError: `invalid_input` (blank text), `payload_too_large`, `busy`, `unknown_message`.
    """
    not_blank(text, "the edited message")
    if len(text) > MAX_QUERY_CHARS:
        message_size = f"the edited message is {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}"
        raise RejectedError(PAYLOAD_TOO_LARGE, message_size)
    status = await _idle(session)
    entry = await user_message(session, message)
    return _point(session, status, entry, text)


async def start_branch(
    session: SessionHandle,
    point: BranchPoint,
    kind: BranchKind,
    *,
    asked_request_id: str,
    session_id: str | None = None,
    record: Callable[[Branch], Awaitable[object]],
) -> Branch:
    """Fork `session` at `point` as a branch of its family (id `session_id`, default chosen) and record it.

    `record` records the branch at the family's root (its `record_branch`). Nothing is asked.

    Raises:
        RejectedError: the fork's refusals (`seq_out_of_range`, `invalid_input`), the root's.
    """
    fork = ForkInput(seq=point.seq, session_id=session_id, branch_of=point.root_id)
    forked = await session.fork(fork)
    branch = Branch(
        session_id=forked.session_id,
        parent_id=point.parent_id,
        seq=point.seq,
        message_seq=point.message_seq,
        request_id=point.request_id,
        asked_request_id=asked_request_id,
        kind=kind,
        text=point.text[:BRANCH_TEXT_CHARS],
    )
    await record(branch)
    return branch


async def _idle(session: SessionHandle) -> SessionStatus:
    status = await session.status()
    if status.active_request_id is not None or status.waiting_requests:
        raise RejectedError(BUSY, "the thread runs a request: edit or regenerate once it has ended")
    return status


def find_user_message(entries: Iterable[Entry], message: MessageRef) -> MessageEntry | None:
    """The user message `message` names among `entries`: at that seq, or the first one of that request."""
    for entry in entries:
        if not isinstance(entry, MessageEntry) or entry.payload.role != "user":
            continue
        if entry.seq == message if isinstance(message, int) else entry.payload.request_id == message:
            return entry
    return None


def unknown_message(message: MessageRef) -> RejectedError:
    """The refusal of a message no user message of the thread is (`unknown_message`)."""
    named = f"seq {message}" if isinstance(message, int) else f"request {message!r}"
    return RejectedError(UNKNOWN_MESSAGE, f"the thread has no user message at {named}")


async def user_message(session: SessionHandle, message: MessageRef) -> MessageEntry:
    """The user message `message` names in the session's thread (`find_user_message`).

    Raises:
        RejectedError: `unknown_message`.
    """
    since = max(message, 0) if isinstance(message, int) else 0
    async for entry in session.thread(since):
        found = find_user_message([entry], message)
        if found is not None:
            return found
        if isinstance(message, int):
            break  # the entry at that seq is not a user message
    raise unknown_message(message)


def _point(session: SessionHandle, status: SessionStatus, entry: MessageEntry, text: str) -> BranchPoint:
    request_id = entry.payload.request_id
    if request_id is None:  # a message no request asked (a restored snapshot's): named by its seq
        request_id = f"seq-{entry.seq}"
    return BranchPoint(
        root_id=family_root(status, session.workflow_id),
        parent_id=session.workflow_id,
        seq=entry.seq - 1,
        message_seq=entry.seq,
        request_id=request_id,
        text=text,
        replaced=entry.payload.content,
        attachments=tuple(entry.payload.attachments or ()),
    )
