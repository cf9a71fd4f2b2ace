"""What a deployment takes as attachments: sizes, counts, the per-principal quota, media types, URLs.

`AttachmentPolicy.from_env()` reads it; the gateway (`gateway.settings`) and the typed client
(`clients.attachment_intake`) both enforce it, so a file is refused by the same rule whichever way
it came.

- `REACT_ATTACHMENT_MAX_BYTES`: one file's bytes at most (default 20 MiB; `20MiB`, `512KiB` or a
  number of bytes).
- `REACT_ATTACHMENTS_PER_MESSAGE`: files one message may carry (default and at most
  `conversation.attachments.MAX_ATTACHMENTS_PER_MESSAGE`, 10).
- `REACT_ATTACHMENT_REQUEST_BYTES`: the decoded bytes of every file of one request together
  (default 50 MiB). A route that carries attachments takes a body of up to about 4/3 of it (base64)
  plus the gateway's `REACT_GATEWAY_MAX_BODY_BYTES`; every other route keeps that limit.
- `REACT_ATTACHMENT_QUOTA_BYTES`: the bytes a principal's recorded files may add up to (default 1 GiB).
- `REACT_ATTACHMENT_MEDIA_TYPES`: the media types taken (comma-separated, `type/*` for a family;
  default images, PDF, text, JSON, audio and video).
- `REACT_ATTACHMENT_URL_ALLOW`: where an attachment given by URL may be fetched from. Unset (the
  default): nowhere, every URL attachment is refused (`url_refused`). `public` admits any public
  address; hosts and CIDRs (the syntax of `REACT_WEBHOOK_ALLOW`, `:<port>` included) admit those,
  private ones too. `REACT_ATTACHMENT_URL_TIMEOUT_S`: one fetch's timeout (default 20 s).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from conversation.attachments import MAX_ATTACHMENTS_PER_MESSAGE
from settings.env_values import SettingsError, value, whole
from settings.env_values import size as size_bytes
from settings.webhook_policy import WebhookPolicy, parse_allow_list

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MEDIA_TYPES",
    "DEFAULT_QUOTA_BYTES",
    "DEFAULT_REQUEST_BYTES",
    "URL_ALLOW_VARIABLE",
    "AttachmentPolicy",
]

KIB: Final = 1024
MIB: Final = 1024 * KIB
GIB: Final = 1024 * MIB
DEFAULT_MAX_BYTES: Final = 20 * MIB
DEFAULT_REQUEST_BYTES: Final = 50 * MIB
DEFAULT_QUOTA_BYTES: Final = 1 * GIB
DEFAULT_URL_TIMEOUT_S: Final = 20.0
DEFAULT_MEDIA_TYPES: Final = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/*",
    "application/json",
    "audio/*",
    "video/*",
)
URL_ALLOW_VARIABLE: Final = "REACT_ATTACHMENT_URL_ALLOW"
_MEDIA = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/(\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,63})")


@dataclass(frozen=True)
class AttachmentPolicy:
    """The deployment's attachment limits (the module docstring)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    per_message: int = MAX_ATTACHMENTS_PER_MESSAGE
    request_bytes: int = DEFAULT_REQUEST_BYTES
    quota_bytes: int = DEFAULT_QUOTA_BYTES
    media_types: tuple[str, ...] = DEFAULT_MEDIA_TYPES
    url: WebhookPolicy | None = None
    """Where URLs may be fetched from (None: nowhere)."""
    url_timeout_s: float = DEFAULT_URL_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AttachmentPolicy:
        """The policy of the environment.

        Raises:
            SettingsError: a variable with a value that cannot be used (named).
        """
        env = os.environ if env is None else env
        max_bytes = _size(env, "REACT_ATTACHMENT_MAX_BYTES", DEFAULT_MAX_BYTES)
        per_message = _count(env, "REACT_ATTACHMENTS_PER_MESSAGE", MAX_ATTACHMENTS_PER_MESSAGE)
        request_bytes = _size(env, "REACT_ATTACHMENT_REQUEST_BYTES", max(DEFAULT_REQUEST_BYTES, max_bytes))
        quota = _size(env, "REACT_ATTACHMENT_QUOTA_BYTES", DEFAULT_QUOTA_BYTES)
        return cls(
            max_bytes=max_bytes,
            per_message=per_message,
            request_bytes=request_bytes,
            quota_bytes=quota,
            media_types=_media_types(env),
            url=_url_policy(env),
            url_timeout_s=_seconds(env, "REACT_ATTACHMENT_URL_TIMEOUT_S", DEFAULT_URL_TIMEOUT_S),
        )

    def takes(self, media_type: str) -> bool:
        """Whether the deployment takes files of `media_type` (`type/*` entries take a family)."""
        family = media_type.partition("/")[0]
        return any(entry in (media_type, f"{family}/*") for entry in self.media_types)

    def body_bytes(self, max_body_bytes: int) -> int:
        """The largest body a route carrying attachments takes: the request's files as base64, and more."""
        return max_body_bytes + (self.request_bytes * 4 + 2) // 3 + 4 * KIB * self.per_message


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    size = size_bytes(env, name, "20971520 or 20MiB")
    if size is None:
        return default
    if size < 1:
        raise SettingsError(name, "must be at least 1 byte")
    return size


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    count = whole(env, name, 0, MAX_ATTACHMENTS_PER_MESSAGE)
    return default if count is None else count


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = value(env, name)
    if text is None:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3_600:
        raise SettingsError(name, "must be a positive number of seconds, at most 3600")
    return seconds


def _media_types(env: Mapping[str, str]) -> tuple[str, ...]:
    name = "REACT_ATTACHMENT_MEDIA_TYPES"
    text = value(env, name)
    if text is None:
        return DEFAULT_MEDIA_TYPES
    entries = tuple(part.strip().lower() for part in text.split(",") if part.strip())
    for entry in entries:
        if not _MEDIA.fullmatch(entry):
            raise SettingsError(name, f"{entry!r} is not a media type such as image/png or text/*")
    return entries


def _url_policy(env: Mapping[str, str]) -> WebhookPolicy | None:
    text = value(env, URL_ALLOW_VARIABLE)
    if text is None:
        return None
    items = [part.strip() for part in text.split(",") if part.strip()]
    public = any(item.lower() == "public" for item in items)
    rest = ",".join(item for item in items if item.lower() != "public")
    hosts, networks = parse_allow_list(URL_ALLOW_VARIABLE, rest)
    return WebhookPolicy(hosts=hosts, networks=networks, public=public, variable=URL_ALLOW_VARIABLE)
