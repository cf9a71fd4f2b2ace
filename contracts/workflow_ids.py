"""Workflow ids: the bound on the ids clients give, and ids the product derives kept under their bounds.

Temporal refuses a workflow id over 1,000 bytes (`MAX_WORKFLOW_ID_BYTES`). A session's id
travels in ids of at most `MAX_ID_CHARS` (a forwarded input's `reply_to`, a fork's seed op),
so a session id is at most `MAX_ID_CHARS` characters, refused by name (`invalid_input`)
otherwise: by the typed client before it sends, by the session at its start. A run's id may
be anything Temporal takes.

The product derives ids from others: a session's runs `<session id>-run-<n>`, an agent's
run `<run id>/agent-<n>`, a fork `<session id>-fork-<n>`, the op ids `fork:<id>:<seq>`,
`restore:<id>` and `rollback-<request id>`. `bounded_id` keeps each under its bound
whatever the id it grows from (a chain of forks included): an id that would be longer
keeps the start of its base, then `~` and 16 hex digits of the base's SHA-256, then its
suffix, so it stays readable, unique and of bounded length.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Annotated, Final

from pydantic import AfterValidator, StringConstraints
from pydantic_core import PydanticCustomError

from conversation.bounds import MAX_ID_CHARS

MAX_WORKFLOW_ID_BYTES: Final = 1_000
"""Temporal's limit on a workflow id (UTF-8 bytes)."""
MAX_SESSION_ID_CHARS: Final = MAX_ID_CHARS
"""A session's id (a fork's too): at most as long as the ids that carry it."""
_DIGEST_CHARS = 16


def bounded_id(base: str, suffix: str, *, max_chars: int = MAX_ID_CHARS) -> str:
    """`base + suffix`, cut to fit `max_chars` characters and `MAX_WORKFLOW_ID_BYTES` bytes.

    What does not fit becomes the start of `base`, `~`, 16 hex digits of `base`'s SHA-256, and `suffix`.
    """
    whole = base + suffix
    if _fits(whole, max_chars):
        return whole
    digest = "~" + hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    keep = max(0, max_chars - len(digest) - len(suffix))
    while keep > 0 and not _fits(base[:keep] + digest + suffix, max_chars):
        keep -= 1
    return base[:keep] + digest + suffix


def _fits(value: str, max_chars: int) -> bool:
    return len(value) <= max_chars and len(value.encode("utf-8", "surrogatepass")) <= MAX_WORKFLOW_ID_BYTES


def workflow_id_problem(value: str, what: str, *, max_chars: int = MAX_SESSION_ID_CHARS) -> str | None:
    """Why `value` cannot be the id `what` names (empty, too long, control characters), or None."""
    if not value.strip():
        return f"{what} must not be empty or blank"
    size = len(value.encode("utf-8", "surrogatepass"))
    if len(value) > max_chars or size > MAX_WORKFLOW_ID_BYTES:
        return f"{what} is {len(value)} characters ({size} bytes); the limit is {max_chars} characters"
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in value):
        return f"{what} holds control characters or lone surrogates"
    return None


def _session_id(value: str) -> str:
    problem = workflow_id_problem(value, "session_id")
    if problem is not None:
        raise PydanticCustomError("invalid_session_id", "{problem}", {"problem": problem})
    return value


SessionId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_SESSION_ID_CHARS), AfterValidator(_session_id)
]
"""A session id a caller gives (a fork's `session_id`): not blank, at most `MAX_SESSION_ID_CHARS`."""
