"""What each database does for the store (`Backend`), the rows it returns, and the schema's versions.

A backend speaks one dialect (`store.sqlite_backend`, `store.postgres_backend`); the rules,
embeddings and ranking live once, in `store.memory_store`. Namespaces are matched by prefix as
a range (`ns = p` or `p/` <= `ns` < `p0`: `0` follows `/`), so no `LIKE` escaping is needed and
the primary key's index serves it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 32
"""Words of a query the full-text search uses (the first ones)."""


@dataclass(frozen=True)
class Row:
    """One stored memory item; times are seconds since the epoch."""

    ns: str
    key: str
    text: str
    value: str | None
    vector: bytes | None
    created_at: float
    updated_at: float
    expires_at: float | None
    write_id: str | None


@dataclass(frozen=True)
class Migration:
    """One version of a backend's schema: the statements that bring the previous one to it."""

    version: int
    statements: Sequence[str]


def prefix_bounds(prefix: str) -> tuple[str, str, str]:
    """(`prefix`, the lowest id under it, the first id past it) for a namespace-prefix range."""
    return prefix, f"{prefix}/", f"{prefix}0"


def query_words(query: str) -> list[str]:
    """The words of `query` a full-text search ORs together (letters and digits only: no syntax)."""
    return _WORD.findall(query.lower())[:MAX_QUERY_WORDS]


class Backend(Protocol):
    """One database's side of the store."""

    async def migrate(self) -> list[int]:
        """Apply the schema versions not applied yet; the versions now applied."""
        ...

    async def put(self, row: Row) -> Row:
        """Insert or replace the item (its `created_at` kept); the last write's `write_id` again: no-op."""
        ...

    async def get(self, ns: str, key: str, now: float) -> Row | None:
        """The item, unless missing or expired."""
        ...

    async def delete(self, ns: str, key: str) -> bool:
        """Remove the item; whether it was there."""
        ...

    async def delete_written(self, prefix: str, write_ids: list[str]) -> int:
        """Remove the items under `prefix` whose last write has one of `write_ids`; how many."""
        ...

    async def list(self, prefix: str, after: str | None, limit: int, now: float) -> list[Row]:
        """Items under `prefix`, ordered by (ns, key), after the cursor (`ns`, a unit separator, `key`)."""
        ...

    async def text_matches(
        self, prefix: str, words: list[str], limit: int, now: float
    ) -> list[tuple[Row, float]]:
        """The `limit` best full-text matches of any of `words` under `prefix`, ranked (higher: better)."""
        ...

    async def recent(self, prefix: str, limit: int, now: float) -> list[Row]:
        """The `limit` most recently updated items under `prefix` (the vector scan's candidates)."""
        ...

    async def sweep(self, now: float) -> int:
        """Delete expired items; how many."""
        ...

    async def count(self, prefix: str) -> int:
        """Items stored under `prefix` (expired ones not yet swept included)."""
        ...

    async def sql(self, statement: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one statement (parameters marked `?`, in both dialects) of a module with its own table.

        `store.usage` keeps its table this way, beside the memory items, in its own module.
        """
        ...

    async def close(self) -> None:
        """Close the connection."""
        ...
