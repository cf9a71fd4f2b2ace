"""A thread's attachments through the gateway: the intake for every front end, the files route's read, erase.

Every protocol adapter turns its own file parts into `AttachmentSource`s (without decoding them)
and calls `take_attachments` before it asks: the one intake (`clients.attachment_intake`, under
the settings' `AttachmentPolicy`) stores each file's bytes in the payload store, one file at a
time, and records it as the thread principal's, for the thread's agent and thread id. A refusal is
a `GatewayError` with the intake's code, raised before anything is asked (each adapter shapes it
its own way). `open_file` is `GET /api/files/{id}`'s read: the caller's own file only (another
principal's is 404, as a missing one). `erase_files` deletes a thread's file records with the
thread (`gateway.core.erase`); the blobs stay: content-addressed, they may be shared by other
records, forks' messages and claim-checked payloads (docs/attachments.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from clients.attachment_intake import AttachmentRefusedError, AttachmentSource
from conversation.attachments import ATTACHMENT_ID_PATTERN, Attachment
from gateway.context import GatewayContext
from gateway.core.store_calls import store_call
from gateway.core.threads import Thread
from gateway.errors import GatewayError, not_found
from gateway.identity.principal import Principal
from gateway.owners import parse_session_id
from payloads.blob_store import BlobMissingError
from store.files import FileRecord

__all__ = ["erase_files", "open_file", "take_attachments"]


async def take_attachments(
    ctx: GatewayContext, thread: Thread, sources: Sequence[AttachmentSource], *, request_id: str | None
) -> list[Attachment]:
    """The references of a message's files, stored and recorded as the thread principal's.

    Raises:
        GatewayError: the intake's refusal by its code (`payload_too_large`, `too_many_attachments`,
            `media_type_mismatch`, `invalid_attachment`, `url_refused`, `unsupported_media_type`,
            `quota_exceeded`, `not_found`), or 503 `unavailable` (the store did not answer).
    """
    if not sources:
        return []
    try:
        return await store_call(
            ctx.intake.take(
                thread.principal.name,
                sources,
                agent=thread.agent,
                thread=thread.thread_id,
                request_id=request_id,
            )
        )
    except AttachmentRefusedError as refused:
        raise GatewayError.refused(refused.code, refused.message) from None


async def open_file(ctx: GatewayContext, principal: Principal, file_id: str) -> tuple[FileRecord, bytes]:
    """`principal`'s file `file_id`: its record and its bytes.

    Raises:
        GatewayError: 404 `not_found` (no such file, another principal's, or its bytes are gone),
            503 `unavailable`.
    """
    if not ATTACHMENT_ID_PATTERN.fullmatch(file_id):
        raise not_found("file")
    record = await store_call(ctx.files.get(principal.name, file_id))
    if record is None:
        raise not_found("file")
    try:
        data = await ctx.intake.blobs.get(record.attachment.sha256)
    except BlobMissingError:
        raise not_found("file") from None
    return record, data


async def erase_files(ctx: GatewayContext, principal: str, session_id: str) -> int:
    """Delete the file records of `principal`'s session `session_id` (a gateway thread); how many.

    Raises:
        GatewayError: 503 `unavailable` (the store did not answer).
    """
    owned = parse_session_id(Principal(principal, frozenset()), session_id)
    if owned is None:
        return 0
    return await store_call(ctx.files.delete_thread(principal, *owned))
