"""Attachments: a file a user message carries, by reference to its bytes in the payload store.

An attachment is `{id, name, media_type, size, sha256}`. Its bytes live in the payload
store (the claim check's blob store, keyed by their SHA-256), never in a workflow's
history, a signal, an Update or an activity input: what travels is this reference, a few
hundred bytes. `id` names the upload (its owner and thread are kept by the gateway's file
records); `sha256` names the bytes, so two uploads of the same bytes share one blob.

A user message carries at most `MAX_ATTACHMENTS_PER_MESSAGE` of them, so the references
of one message stay under about 4 KiB of JSON.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_ATTACHMENTS_PER_MESSAGE: Final = 10
"""Files one user message may carry (`REACT_ATTACHMENTS_PER_MESSAGE` may lower it, never raise it)."""
MAX_ATTACHMENT_NAME_CHARS: Final = 255
"""An attachment's file name, as a file system allows it."""
ATTACHMENT_ID_PATTERN: Final = re.compile(r"^f-[0-9a-f]{32}$")
"""An attachment id: `f-` and 32 lower-case hex digits (check with `fullmatch`)."""

AttachmentId = Annotated[str, StringConstraints(pattern=r"^f-[0-9a-f]{32}$")]
MediaType = Annotated[
    str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$")
]
"""A media type without parameters, lower case (`image/png`, `application/pdf`)."""
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Attachment(BaseModel):
    """A reference to a file's bytes in the payload store (immutable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: AttachmentId
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ATTACHMENT_NAME_CHARS)]
    media_type: MediaType
    size: Annotated[int, Field(ge=0)]
    sha256: Sha256


Attachments = Annotated[list[Attachment], Field(max_length=MAX_ATTACHMENTS_PER_MESSAGE)]
"""The attachments of one user message (at most `MAX_ATTACHMENTS_PER_MESSAGE`)."""
