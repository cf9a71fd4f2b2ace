"""The intake of attachments: a user's files into the payload store, as `Attachment` references, once.

One layer for every way in: the gateway's front ends (AI SDK file parts, AG-UI media parts, A2A
file parts, MCP `ask` attachments) and the typed client (`SessionHandle.ask(..., attachments=...)`,
the CLI's `ask --attach`). Each file is an `AttachmentSource`: a declared name and media type and
its bytes, given as bytes, base64, a data URL, an http(s) URL (fetched once: `payloads.url_fetch`),
a file on disk, or the id of a file its owner attached before. `AttachmentIntake.take` handles the
sources of one message in order, one at a time: it decodes a file, checks it, writes its bytes to
the payload store (`BlobStore.put`, keyed by their SHA-256) and lets go of them before the next,
so a request never holds more than one decoded file. Then it records the new files
(`store.files.FileStore`: id, owner, agent and thread, name, media type, size, sha256, created).

The checks (`policy`: `settings.attachment_policy`), each a refusal by name
(`AttachmentRefusedError`, a `RejectedError` with the product's code; nothing is recorded):

- more files than `per_message`: `too_many_attachments`;
- a file over `max_bytes`, or the request's files over `request_bytes`: `payload_too_large`, naming
  the limit; the principal's recorded bytes over `quota_bytes`: `quota_exceeded`;
- bad base64, a data URL without a media type, no media type at all, an empty file, a bad name:
  `invalid_attachment`;
- the media type is checked from the bytes (`filetype`): a declared image, audio, video or PDF
  whose bytes are not one (or another one) is `media_type_mismatch`, and so is text-like content
  (`text/*`, JSON, XML, YAML) that is not UTF-8 text or whose bytes are a known binary format;
- a media type the deployment does not take: `unsupported_media_type`;
- a URL not fetched: `url_refused`; an unknown file id, or another principal's: `not_found`.

A file's id is `f-` and 32 hex digits; with a request id it is derived from the owner, the thread,
the request, the file's place in the message and its bytes, so a retried ask (the same request id)
names the same files and records nothing twice.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import mimetypes
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Final
from urllib.parse import unquote_to_bytes

import filetype  # pyright: ignore[reportMissingTypeStubs]

from clients.errors import RejectedError
from contracts.errors import (
    INVALID_ATTACHMENT,
    MEDIA_TYPE_MISMATCH,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    QUOTA_EXCEEDED,
    TOO_MANY_ATTACHMENTS,
    UNSUPPORTED_MEDIA_TYPE,
    URL_REFUSED,
)
from conversation.attachments import ATTACHMENT_ID_PATTERN, MAX_ATTACHMENT_NAME_CHARS, Attachment
from payloads.blob_store import BlobStore
from payloads.url_fetch import UrlRefusedError, UrlTooLargeError, fetch_url
from settings.attachment_policy import AttachmentPolicy
from store.files import FileStore

__all__ = [
    "AttachmentIntake",
    "AttachmentRefusedError",
    "AttachmentSource",
    "checked_media_type",
    "is_text_like",
    "owned_file",
]

SNIFF_BYTES: Final = 8_192
"""How much of a file `filetype` reads to tell what it is."""
_MEDIA: Final = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}")
_FILE_REF: Final = re.compile(r"^(?:/api/files/)?(f-[0-9a-f]{32})$")
_TEXT_APPLICATIONS: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/javascript",
        "application/x-ndjson",
        "application/sql",
        "application/toml",
    }
)
_ALIASES: Final = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "application/x-pdf": "application/pdf",
    "text/x-markdown": "text/markdown",
    "audio/mp3": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
}
_CHECKED_FAMILIES: Final = frozenset({"image", "audio", "video"})


class AttachmentRefusedError(RejectedError):
    """A file refused by name (the module docstring lists the codes); nothing was recorded or asked."""


@dataclass(frozen=True)
class AttachmentSource:
    """One file as a front end gave it: a declared name and media type, and where its bytes are.

    Exactly one of `data`, `base64`, `data_url`, `url`, `path`, `file_id` and `reference` is set
    (`of_url` sorts a URL-like text into the right one).
    """

    name: str | None = None
    media_type: str | None = None
    data: bytes | None = None
    base64: str | None = None
    data_url: str | None = None
    url: str | None = None
    path: Path | None = None
    file_id: str | None = None
    reference: Attachment | None = None
    """A reference made before, taken as it is (the typed client's `Attachment` models: trusted)."""

    @classmethod
    def of_url(cls, text: str, *, name: str | None = None, media_type: str | None = None) -> AttachmentSource:
        """A source of a URL-like text: a data URL, an http(s) URL, a file id (`f-...`, `/api/files/f-...`).

        Raises:
            AttachmentRefusedError: `invalid_attachment` for anything else.
        """
        found = _FILE_REF.fullmatch(text)
        if found is not None:
            return cls(name=name, media_type=media_type, file_id=found.group(1))
        scheme = text.partition(":")[0].lower()
        if scheme == "data":
            return cls(name=name, media_type=media_type, data_url=text)
        if scheme in ("http", "https"):
            return cls(name=name, media_type=media_type, url=text)
        shown = f" ({name!r})" if name else ""
        raise AttachmentRefusedError(
            INVALID_ATTACHMENT,
            f"a file{shown} must be a data URL, an http(s) URL or a file id (f-...), not {text[:40]!r}",
        )


class AttachmentIntake:
    """Files into the payload store and the file records, under `policy` (the module docstring)."""

    def __init__(self, policy: AttachmentPolicy, blobs: BlobStore, files: FileStore) -> None:
        """Write bytes to `blobs` and records to `files`, as `policy` allows."""
        self.policy = policy
        self.blobs = blobs
        self.files = files

    async def take(
        self,
        owner: str,
        sources: Sequence[AttachmentSource],
        *,
        agent: str | None = None,
        thread: str | None = None,
        request_id: str | None = None,
    ) -> list[Attachment]:
        """The references of one message's files, each stored and recorded as `owner`'s.

        Raises:
            AttachmentRefusedError: the first file refused (nothing is recorded).
            StoreError: the store of the records did not answer (`unavailable`).
            BlobStoreError: the payload store cannot be written.
        """
        policy = self.policy
        if len(sources) > policy.per_message:
            raise AttachmentRefusedError(
                TOO_MANY_ATTACHMENTS,
                f"the message has {len(sources)} files; at most {policy.per_message} are taken per message "
                "(REACT_ATTACHMENTS_PER_MESSAGE)",
            )
        taken: list[Attachment] = []
        new: list[Attachment] = []
        used: int | None = None
        total = 0
        for index, source in enumerate(sources):
            label = _label(index, source.name)
            if source.reference is not None:
                taken.append(source.reference)
                continue
            if source.file_id is not None:
                taken.append(await self._earlier(owner, source.file_id))
                continue
            if used is None:
                used = await self.files.stored_bytes(owner)
            data, declared, given_name = await self._bytes(source, label)
            total += len(data)
            _check_size(policy, label, len(data), total, used)
            name = _file_name(given_name, index, label)
            media_type = checked_media_type(declared, data, name, label)
            if not policy.takes(media_type):
                raise AttachmentRefusedError(
                    UNSUPPORTED_MEDIA_TYPE,
                    f"{label} is {media_type}, which this deployment does not take "
                    f"(REACT_ATTACHMENT_MEDIA_TYPES: {', '.join(policy.media_types)})",
                )
            sha256 = await self.blobs.put(data)
            size = len(data)
            del data  # the next file is decoded only once this one's bytes are gone
            attachment = Attachment(
                id=_file_id(owner, thread, request_id, index, sha256),
                name=name,
                media_type=media_type,
                size=size,
                sha256=sha256,
            )
            taken.append(attachment)
            new.append(attachment)
        if new:
            await self.files.add(owner, new, agent=agent, thread=thread)
        return taken

    async def _earlier(self, owner: str, file_id: str) -> Attachment:
        return await owned_file(self.files, owner, file_id)

    async def _bytes(self, source: AttachmentSource, label: str) -> tuple[bytes, str | None, str | None]:
        """The file's bytes, its declared media type and its name (checked against the file limit first)."""
        limit = self.policy.max_bytes
        if source.data is not None:
            return source.data, source.media_type, source.name
        if source.base64 is not None:
            return _decode_base64(source.base64, label, limit), source.media_type, source.name
        if source.data_url is not None:
            data, media_type = _decode_data_url(source.data_url, label, limit)
            return data, source.media_type or media_type, source.name
        if source.path is not None:
            return _read_path(source.path, label, limit), source.media_type, source.name or source.path.name
        if source.url is not None:
            try:
                fetched = await fetch_url(self.policy, source.url)
            except UrlTooLargeError as error:
                raise AttachmentRefusedError(PAYLOAD_TOO_LARGE, f"{label}: {error}") from None
            except UrlRefusedError as error:
                raise AttachmentRefusedError(URL_REFUSED, f"{label}: {error}") from None
            return fetched.data, source.media_type or fetched.media_type, source.name or fetched.name
        raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label} carries no bytes, URL or file id")


async def owned_file(files: FileStore, owner: str, file_id: str) -> Attachment:
    """`owner`'s file `file_id`, recorded earlier (another principal's does not exist for them).

    Raises:
        AttachmentRefusedError: `not_found`.
    """
    record = await files.get(owner, file_id) if ATTACHMENT_ID_PATTERN.fullmatch(file_id) else None
    if record is None:
        raise AttachmentRefusedError(NOT_FOUND, f"no such file {file_id[:40]!r}")
    return record.attachment


def _label(index: int, name: str | None) -> str:
    shown = f" ({name[:80]!r})" if name else ""
    return f"attachment {index + 1}{shown}"


def _too_large(label: str, size: int, limit: int) -> AttachmentRefusedError:
    return AttachmentRefusedError(
        PAYLOAD_TOO_LARGE,
        f"{label} is {size:,} bytes; the limit is {limit:,} bytes per file (REACT_ATTACHMENT_MAX_BYTES)",
    )


def _check_size(policy: AttachmentPolicy, label: str, size: int, total: int, used: int) -> None:
    if size > policy.max_bytes:
        raise _too_large(label, size, policy.max_bytes)
    if size == 0:
        raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label} is empty")
    if total > policy.request_bytes:
        raise AttachmentRefusedError(
            PAYLOAD_TOO_LARGE,
            f"the message's files add up to more than {policy.request_bytes:,} bytes, the limit per request "
            "(REACT_ATTACHMENT_REQUEST_BYTES)",
        )
    if used + total > policy.quota_bytes:
        raise AttachmentRefusedError(
            QUOTA_EXCEEDED,
            f"{label} would bring your stored files to {used + total:,} bytes; the quota is "
            f"{policy.quota_bytes:,} bytes (REACT_ATTACHMENT_QUOTA_BYTES)",
        )


def _decode_base64(text: str, label: str, limit: int) -> bytes:
    compact = "".join(text.split()) if any(c.isspace() for c in text[:4096]) or "\n" in text else text
    if (len(compact) // 4) * 3 - 2 > limit:
        raise _too_large(label, (len(compact) // 4) * 3, limit)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        pass
    try:  # the URL-safe alphabet, as some clients send it
        return base64.b64decode(compact.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label} is not valid base64") from None


def _decode_data_url(url: str, label: str, limit: int) -> tuple[bytes, str]:
    head, comma, payload = url.partition(",")
    if not comma:
        raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label} is a data URL without a comma")
    params = head[len("data:") :].split(";")
    media_type = params[0].strip().lower()
    if not media_type:
        raise AttachmentRefusedError(
            INVALID_ATTACHMENT, f"{label} is a data URL without a media type (data:<type>;base64,...)"
        )
    if any(p.strip().lower() == "base64" for p in params[1:]):
        return _decode_base64(payload, label, limit), media_type
    if len(payload) > 3 * limit:
        raise _too_large(label, len(payload), limit)
    return unquote_to_bytes(payload), media_type


def _read_path(path: Path, label: str, limit: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > limit:
            raise _too_large(label, size, limit)
        return path.read_bytes()
    except OSError as error:
        raise AttachmentRefusedError(
            INVALID_ATTACHMENT, f"{label}: cannot read {path}: {error.strerror or error}"
        ) from None


def _file_name(given: str | None, index: int, label: str) -> str:
    """The name kept: the last part of a path, without control characters; a default when none."""
    if given:
        base = PureWindowsPath(PurePosixPath(given).name).name
        cleaned = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
        if cleaned in ("", ".", ".."):
            raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label} has no usable file name")
        return cleaned[:MAX_ATTACHMENT_NAME_CHARS]
    return f"attachment-{index + 1}"


def _file_id(owner: str, thread: str | None, request_id: str | None, index: int, sha256: str) -> str:
    if request_id is None:
        return f"f-{uuid.uuid4().hex}"
    key = "\x1f".join((owner, thread or "", request_id, str(index), sha256))
    return f"f-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def normal_media_type(text: str | None, label: str) -> str | None:
    """A declared media type lower-cased, without parameters, its common aliases resolved (None: none).

    Raises:
        AttachmentRefusedError: `invalid_attachment` for text that is not a media type.
    """
    if text is None or not text.strip():
        return None
    media = text.split(";")[0].strip().lower()
    if not _MEDIA.fullmatch(media):
        raise AttachmentRefusedError(INVALID_ATTACHMENT, f"{label}: {text[:80]!r} is not a media type")
    return _ALIASES.get(media, media)


def is_text_like(media_type: str) -> bool:
    """Whether files of `media_type` are text (`text/*`, JSON, XML, YAML, `+json`, `+xml`)."""
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_APPLICATIONS
        or media_type.endswith(("+json", "+xml", "+yaml"))
    )


def _sniffed(data: bytes) -> str | None:
    kind = filetype.guess(data[:SNIFF_BYTES])  # pyright: ignore[reportUnknownMemberType]
    mime: object = getattr(kind, "mime", None)
    return _ALIASES.get(mime, mime) if isinstance(mime, str) else None


def _is_utf8(data: bytes) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(view), 1 << 20):
            decoder.decode(view[start : start + (1 << 20)])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def checked_media_type(declared: str | None, data: bytes, name: str, label: str) -> str:
    """The media type a file is stored with, checked against its bytes (the module docstring's rules).

    Without a declared type, the bytes' (`filetype`), else the name's extension, else `text/plain`
    for UTF-8 text.

    Raises:
        AttachmentRefusedError: `media_type_mismatch`, or `invalid_attachment` for no type at all.
    """
    media = normal_media_type(declared, label)
    sniffed = _sniffed(data)
    if media is None or media == "application/octet-stream":
        guessed = normal_media_type(mimetypes.guess_type(name)[0], label) if "." in name else None
        media = sniffed or guessed or ("text/plain" if _is_utf8(data) else None)
        if media is None:
            raise AttachmentRefusedError(
                INVALID_ATTACHMENT,
                f"{label} declares no media type and its bytes are not one this gateway knows",
            )
    family = media.partition("/")[0]
    if is_text_like(media):
        if sniffed is not None:
            raise AttachmentRefusedError(
                MEDIA_TYPE_MISMATCH, f"{label} is declared {media}, but its bytes are {sniffed}"
            )
        if not _is_utf8(data):
            raise AttachmentRefusedError(
                MEDIA_TYPE_MISMATCH, f"{label} is declared {media}, but is not UTF-8 text"
            )
        return media
    known = filetype.get_type(mime=media) is not None  # pyright: ignore[reportUnknownMemberType]
    if family in _CHECKED_FAMILIES or known:
        what = {"image": "an image", "audio": "audio", "video": "a video"}.get(family, media)
        if sniffed is None:
            raise AttachmentRefusedError(
                MEDIA_TYPE_MISMATCH, f"{label} is declared {media}, but its bytes are not {what}"
            )
        same = sniffed == media or (
            family in ("audio", "video") and sniffed.partition("/")[0] in ("audio", "video")
        )
        if not same:
            raise AttachmentRefusedError(
                MEDIA_TYPE_MISMATCH, f"{label} is declared {media}, but its bytes are {sniffed}"
            )
    return media
