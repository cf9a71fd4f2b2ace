"""What a session shows of itself in its Temporal memo, for listings that read no history.

A listing of threads (`gateway.core.listing`) reads each session's memo from visibility, one
query for a hundred threads: its title (`TITLE_MEMO`: the first message it was asked, cut to
`MAX_TITLE_CHARS`, until a name is given with the `rename` Update), when it was last used
(`LAST_USED_MEMO`: when its last request ended, ISO 8601) and its last request
(`LAST_REQUEST_MEMO`: id and status). Each value is small: the memo stays under 1 KB.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, StringConstraints
from pydantic_core import PydanticCustomError

__all__ = [
    "LAST_REQUEST_MEMO",
    "LAST_USED_MEMO",
    "MAX_TITLE_CHARS",
    "TITLE_MEMO",
    "RenameInput",
    "ThreadTitle",
    "title_from",
]

TITLE_MEMO: Final = "title"
LAST_USED_MEMO: Final = "last_used_at"
LAST_REQUEST_MEMO: Final = "last_request"
MAX_TITLE_CHARS: Final = 80


def _clean(value: str) -> str:
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in value):
        raise PydanticCustomError("invalid_title", "a title holds no control characters or lone surrogates")
    return value


ThreadTitle = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_CHARS),
    AfterValidator(_clean),
]
"""A name given to a thread: not blank, at most `MAX_TITLE_CHARS` characters, one line."""


class RenameInput(BaseModel):
    """Payload of a session's `rename` Update: the name its listings show from now on."""

    title: ThreadTitle


def title_from(message: str) -> str | None:
    """A thread's title from its first message: the first non-blank line, cut to `MAX_TITLE_CHARS`.

    Control characters become spaces; a message with no text (only files) gives no title.
    """
    line = next((line.strip() for line in message.splitlines() if line.strip()), "")
    line = "".join(" " if unicodedata.category(char) in ("Cc", "Cs") else char for char in line)
    if not line:
        return None
    return line if len(line) <= MAX_TITLE_CHARS else line[: MAX_TITLE_CHARS - 1].rstrip() + "…"
