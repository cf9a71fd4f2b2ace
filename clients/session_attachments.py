"""The typed client's attachments: paths, bytes or `Attachment` models, as an ask's references.

`SessionHandle.ask(query, attachments=[...])` (and the CLI's `ask --attach FILE`) takes each item as:

- an `Attachment` (a reference an earlier intake made, e.g. the gateway's): sent as it is;
- a path (`str` or `os.PathLike`): the file's bytes, its name, its media type from its bytes
  (else its extension);
- `bytes`: the bytes, named `attachment-<n>`, their media type from the bytes;
- an `AttachmentSource`: any other way in (base64, a data URL, an http(s) URL, a declared type).

Everything but an `Attachment` goes through the one intake (`clients.attachment_intake`) under
the deployment's policy (`AttachmentPolicy.from_env`): the bytes into the payload store this
client's data converter uses, a record in the store `REACT_STORE_URL` names, owned by
`attachment_owner` (default the store's local principal). The typed client talks to Temporal
directly, so it is trusted with the references it is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from clients.attachment_intake import AttachmentIntake, AttachmentSource
from contracts.memory import LOCAL_PRINCIPAL
from conversation.attachments import Attachment
from payloads.blob_store import BlobStore
from settings.attachment_policy import AttachmentPolicy
from store.files import FileStore

__all__ = ["AttachmentLike", "resolve_attachments"]

AttachmentLike = Attachment | AttachmentSource | bytes | str | os.PathLike[str]
"""What `SessionHandle.ask(attachments=...)` takes (the module docstring)."""


def _source(item: AttachmentSource | bytes | str | os.PathLike[str]) -> AttachmentSource:
    if isinstance(item, AttachmentSource):
        return item
    if isinstance(item, bytes):
        return AttachmentSource(data=item)
    return AttachmentSource(path=Path(item))


async def resolve_attachments(
    items: Sequence[AttachmentLike],
    blobs: BlobStore,
    *,
    session_id: str,
    request_id: str,
    owner: str | None = None,
    policy: AttachmentPolicy | None = None,
    store_url: str | None = None,
) -> list[Attachment]:
    """The references of `items`, in order (the new files stored and recorded as `owner`'s).

    Raises:
        AttachmentRefusedError: a file refused by name (`clients.attachment_intake`); nothing recorded.
    """
    sources = [
        AttachmentSource(reference=item) if isinstance(item, Attachment) else _source(item) for item in items
    ]
    if all(source.reference is not None for source in sources):
        return [source.reference for source in sources if source.reference is not None]
    files = FileStore(store_url)
    intake = AttachmentIntake(policy or AttachmentPolicy.from_env(), blobs, files)
    try:
        return await intake.take(owner or LOCAL_PRINCIPAL, sources, thread=session_id, request_id=request_id)
    finally:
        await files.close()
