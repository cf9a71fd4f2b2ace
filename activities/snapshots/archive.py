"""The session's thread archive: segments of old entries in the payload store.

A session keeps only the newest part of its thread in memory. Once that tail reaches
`ARCHIVE_CHARS`, it archives it with `archive_segment` while a run works (one JSON blob,
content-addressed, so an identical segment is stored once), and carries only the
`SegmentRef`s when it continues as new. Reading
old entries back (`read_segment`) is rare: an `await_result` for an answer that has
been archived, or a client paging through the thread (the typed client reads the
store directly).
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from contracts import Segment, SegmentRef
from contracts.activities import ARCHIVE_SEGMENT_ACTIVITY, READ_SEGMENT_ACTIVITY
from contracts.errors import BLOB_MISSING
from payloads.blob_store import BlobMissingError, BlobStore


class ArchiveActivities:
    """Write and read thread segments in the payload store."""

    def __init__(self, store: BlobStore) -> None:
        """Use `store`."""
        self._store = store

    @activity.defn(name=ARCHIVE_SEGMENT_ACTIVITY)
    async def archive_segment(self, segment: Segment) -> SegmentRef:
        """Store a segment; return its reference."""
        data = segment.model_dump_json().encode()
        digest = await self._store.put(data)
        last = segment.entries[-1].seq if segment.entries else segment.first_seq - 1
        return SegmentRef(digest=digest, first_seq=segment.first_seq, last_seq=last, size_bytes=len(data))

    @activity.defn(name=READ_SEGMENT_ACTIVITY)
    async def read_segment(self, ref: SegmentRef) -> Segment:
        """Read a segment back.

        Raises:
            ApplicationError: non-retryable `blob_missing` when the store no longer has it.
        """
        return await read_segment(self._store, ref)


async def read_segment(store: BlobStore, ref: SegmentRef) -> Segment:
    """A segment from `store` (also used by clients paging through a session's thread)."""
    try:
        data = await store.get(ref.digest)
    except BlobMissingError as err:
        raise ApplicationError(str(err), type=BLOB_MISSING, non_retryable=True) from None
    return Segment.model_validate_json(data)
