"""Paged reads of a thread (the `thread` query of runs and sessions) and archived thread segments.

A thread can be larger than any payload, so it is read in pages: `ThreadQuery` asks
for entries from `since_seq` on; the answer holds at most `limit` entries and about
`PAGE_BYTES` of them (always at least one), and `next_seq` says where to continue.
A session keeps only the newest part of its thread in memory; older entries are
archived in the payload store in segments. A page that starts in the archive carries
the `SegmentRef` instead of entries; the typed client (`client.Sessions.thread`)
reads the segment from the store and continues.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from conversation import Entry, MessageEntry

PAGE_BYTES = 1024 * 1024
DEFAULT_PAGE_ENTRIES = 200
MAX_PAGE_ENTRIES = 1_000


class ThreadQuery(BaseModel):
    """Entries with seq >= `since_seq`, at most `limit` of them."""

    since_seq: Annotated[int, Field(ge=0)] = 0
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE_ENTRIES)] = DEFAULT_PAGE_ENTRIES


class SegmentRef(BaseModel):
    """An archived run of thread entries: seqs `first_seq`..`last_seq`, a JSON blob in the payload store.

    The blob is the JSON of `Segment`, stored under its SHA-256 (`digest`).
    """

    digest: str
    first_seq: int
    last_seq: int
    size_bytes: int


class Segment(BaseModel):
    """The archived entries themselves (what a `SegmentRef` points to)."""

    first_seq: int
    entries: list[Entry]


class ThreadPage(BaseModel):
    """One page of a thread.

    `entries` are in seq order from `since_seq` on; when `since_seq` lies in an archived
    segment, `entries` is empty and `segment` names it. `next_seq` is where the next page
    starts (None: this page reached the end). `length` is the thread's length (its next seq).
    """

    entries: list[Entry] = []
    segment: SegmentRef | None = None
    next_seq: int | None = None
    length: int = 0


def page_of(
    entries: list[Entry], first_seq: int, query: ThreadQuery, archive: list[SegmentRef] | None = None
) -> ThreadPage:
    """The page `query` asks for from a thread whose in-memory part starts at `first_seq`.

    `entries` are the in-memory entries (seq `first_seq` on); `archive` the segments
    before them, oldest first.
    """
    length = first_seq + len(entries)
    since = query.since_seq
    if since < first_seq:
        for segment in archive or []:
            if segment.first_seq <= since <= segment.last_seq:
                return ThreadPage(segment=segment, next_seq=segment.last_seq + 1, length=length)
        since = first_seq  # before anything kept (cannot happen for a session's own archive)
    page: list[Entry] = []
    size = 0
    for entry in entries[since - first_seq :]:
        if page and (len(page) >= query.limit or size >= PAGE_BYTES):
            break
        page.append(entry)
        size += entry_size(entry)
    end = since + len(page)
    return ThreadPage(entries=page, next_seq=end if end < length else None, length=length)


def entry_size(entry: Entry) -> int:
    """The entry's size, roughly (text dominates), without serializing it."""
    if isinstance(entry, MessageEntry):
        payload = entry.payload
        calls = sum(len(c.arguments) + len(c.name) for c in payload.tool_calls or ())
        return 200 + len(payload.content) + calls + len(payload.thinking or "")
    context = entry.payload.operation.result_context
    return 200 + (sum(len(m.content) for m in context.messages) if context is not None else 0)
