"""Fetching an attachment given by URL once, under the deployment's URL allow-list (as webhooks connect).

`fetch_url` checks the URL and every address its host resolves to (`payloads.checked_address`,
against `REACT_ATTACHMENT_URL_ALLOW`), connects to the checked address, never follows a redirect,
reads at most the file limit (one byte more is refused, the connection closed), and gives up after
the policy's timeout. The gateway's intake calls it directly, before the ask (so a refused URL is
refused by name, with nothing asked), and stores what it read: a retry or a fork reads the stored
bytes, never the URL again (docs/attachments.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from typing import Final
from urllib.parse import unquote, urlsplit

import aiohttp
from yarl import URL

from payloads.checked_address import AddressRefusedError, checked_address
from settings.attachment_policy import URL_ALLOW_VARIABLE, AttachmentPolicy

__all__ = ["FetchedFile", "UrlRefusedError", "UrlTooLargeError", "fetch_url"]

_READ_BUFFER_BYTES: Final = 64 * 1024


class UrlRefusedError(ValueError):
    """A URL the policy refuses, or one that did not answer with a file (the message says which)."""


class UrlTooLargeError(ValueError):
    """The URL's file is over the file limit."""


@dataclass(frozen=True)
class FetchedFile:
    """What a URL answered: its bytes, its declared media type and its file name, if it gave them."""

    data: bytes
    media_type: str | None
    name: str | None


async def fetch_url(policy: AttachmentPolicy, url: str) -> FetchedFile:
    """The file at `url` (see the module docstring).

    Raises:
        UrlRefusedError: no fetch is allowed, the destination is refused, a redirect, a status
            that is not 2xx, a timeout or a connection that failed.
        UrlTooLargeError: more than `policy.max_bytes`.
    """
    allow = policy.url
    if allow is None:
        raise UrlRefusedError(f"this deployment fetches no URL attachments ({URL_ALLOW_VARIABLE} is unset)")
    try:
        target = URL(url)
        address = await checked_address(allow, target)
    except (AddressRefusedError, ValueError) as refused:
        raise UrlRefusedError(f"the URL is refused: {refused}") from None
    except ConnectionError as error:
        raise UrlRefusedError(f"the URL could not be reached: {error}") from None
    headers = {"host": target.raw_authority, "user-agent": "durable-react-attachments"}
    timeout = aiohttp.ClientTimeout(total=policy.url_timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout, read_bufsize=_READ_BUFFER_BYTES) as session,
            session.get(
                target.with_host(address),
                headers=headers,
                allow_redirects=False,
                server_hostname=target.host if target.scheme == "https" else None,
            ) as response,
        ):
            if 300 <= response.status < 400:
                raise UrlRefusedError(f"the URL redirected ({response.status}); redirects are not followed")
            if not 200 <= response.status < 300:
                raise UrlRefusedError(f"the URL answered {response.status}")
            declared = response.content_length
            if declared is not None and declared > policy.max_bytes:
                raise UrlTooLargeError(_too_large(policy, declared))
            data = await response.content.read(policy.max_bytes + 1)
            if len(data) > policy.max_bytes or not response.content.at_eof():
                raise UrlTooLargeError(_too_large(policy, None))
            media = response.headers.get("content-type")
            name = _disposition_name(response.headers.get("content-disposition")) or _path_name(url)
    except TimeoutError:
        raise UrlRefusedError(f"the URL did not answer within {policy.url_timeout_s:g} s") from None
    except (aiohttp.ClientError, OSError) as error:
        raise UrlRefusedError(f"the URL could not be fetched: {type(error).__name__}") from None
    return FetchedFile(data, media.split(";")[0].strip().lower() if media else None, name)


def _too_large(policy: AttachmentPolicy, size: int | None) -> str:
    said = f" ({size:,} bytes)" if size is not None else ""
    return f"the URL's file{said} is over the limit of {policy.max_bytes:,} bytes per file"


def _disposition_name(header: str | None) -> str | None:
    if not header:
        return None
    message = Message()
    message["content-disposition"] = header
    name = message.get_filename()
    return name or None


def _path_name(url: str) -> str | None:
    last = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return last or None
