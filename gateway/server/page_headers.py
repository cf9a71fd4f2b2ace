"""The headers every page the gateway serves carries (the chat page, the report page).

The gateway's own files only, no framing (the pages' buttons cannot be clickjacked), images also
from `blob:` URLs (thumbnails fetched with the bearer token; the report's download), no sniffing,
no referrer.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PAGE_HEADERS"]

PAGE_HEADERS: Final = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; img-src 'self' blob:"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
