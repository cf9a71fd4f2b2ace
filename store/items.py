"""The rules of a memory item's parts, checked before anything is written (refused by name)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, cast

from pydantic_core import to_json

from contracts.memory import (
    KEY_PATTERN,
    MAX_MEMORY_TEXT_CHARS,
    MAX_MEMORY_VALUE_BYTES,
    MAX_PAGE_SIZE,
    MAX_PATH_SEGMENTS,
    MAX_SEARCH_LIMIT,
    MAX_SEARCH_QUERY_CHARS,
    MAX_TTL_S,
    MIN_TTL_S,
    SEGMENT_PATTERN,
)
from store.errors import StoreInputError

Namespace = Sequence[str]
"""(principal, the agent's memory namespace, optional path parts...)."""


def namespace_id(namespace: Namespace, *, prefix: bool = False) -> str:
    """The namespace as stored (`principal/agent/path`), after its rules.

    A prefix (for list and search) may stop after the principal; an item's namespace has at
    least the principal and the agent's namespace.

    Raises:
        StoreInputError: `invalid_input` naming the rule a part breaks.
    """
    if isinstance(namespace, str):
        raise StoreInputError("namespace must be a list of parts, not a string")
    parts = list(namespace)
    least = 1 if prefix else 2
    if not least <= len(parts) <= 2 + MAX_PATH_SEGMENTS:
        raise StoreInputError(
            f"namespace must have {least} to {2 + MAX_PATH_SEGMENTS} parts (principal, agent, path), "
            f"not {len(parts)}"
        )
    for part in parts:
        if not isinstance(part, str) or not SEGMENT_PATTERN.fullmatch(part):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreInputError(f"namespace part {part!r} must match {SEGMENT_PATTERN.pattern}")
    return "/".join(parts)


def check_key(key: str) -> str:
    """`key`, if it follows `KEY_PATTERN`.

    Raises:
        StoreInputError: `invalid_input` naming the pattern.
    """
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError(f"key must match {KEY_PATTERN.pattern}")
    return key


def check_text(text: str) -> str:
    """`text`, if it is not blank and at most `MAX_MEMORY_TEXT_CHARS`.

    Raises:
        StoreInputError: `invalid_input` (blank or not a string), `payload_too_large`.
    """
    if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError("text must be a non-empty string")
    if len(text) > MAX_MEMORY_TEXT_CHARS:
        raise StoreInputError.too_large(
            f"text is {len(text)} characters; the limit is {MAX_MEMORY_TEXT_CHARS}"
        )
    return text


def value_json(value: object) -> str | None:
    """The JSON text of `value` (None stays None), if at most `MAX_MEMORY_VALUE_BYTES`.

    Raises:
        StoreInputError: `invalid_input` (not JSON), `payload_too_large`.
    """
    if value is None:
        return None
    try:
        data = to_json(value)
    except Exception:
        raise StoreInputError("value must be JSON data") from None
    if len(data) > MAX_MEMORY_VALUE_BYTES:
        raise StoreInputError.too_large(
            f"value is {len(data)} bytes of JSON; the limit is {MAX_MEMORY_VALUE_BYTES}"
        )
    return data.decode()


def check_ttl(ttl_s: float | None) -> float | None:
    """`ttl_s`, if None or between `MIN_TTL_S` and `MAX_TTL_S` seconds.

    Raises:
        StoreInputError: `invalid_input` naming the range.
    """
    if ttl_s is None:
        return None
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float) or not MIN_TTL_S <= ttl_s <= MAX_TTL_S:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError(f"ttl_s must be a number from {MIN_TTL_S} to {MAX_TTL_S}")
    return float(ttl_s)


def check_query(query: str) -> str:
    """A search's `query`, if a non-empty string of at most `MAX_SEARCH_QUERY_CHARS`.

    Raises:
        StoreInputError: `invalid_input`, `payload_too_large`.
    """
    if not isinstance(query, str) or not query.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError("query must be a non-empty string")
    if len(query) > MAX_SEARCH_QUERY_CHARS:
        raise StoreInputError.too_large(
            f"query is {len(query)} characters; the limit is {MAX_SEARCH_QUERY_CHARS}"
        )
    return query


MAX_FILTERS: Final = 8
"""Value fields one search may filter on."""
FILTER_FIELD: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
"""A filtered field: a top-level key of the items' JSON values."""
FilterValue = str | int | float | bool | None
"""What a filtered field must equal (a JSON scalar; `None` matches a JSON `null`)."""


def check_filters(filters: Mapping[str, FilterValue]) -> dict[str, FilterValue]:
    """`filters` if at most `MAX_FILTERS` fields, each a plain name equal to a JSON scalar.

    Raises:
        StoreInputError: `invalid_input` naming the field.
    """
    if not isinstance(filters, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError("filters must be an object of value fields and the values they must equal")
    if len(filters) > MAX_FILTERS:
        raise StoreInputError(f"filters name {len(filters)} fields; the limit is {MAX_FILTERS}")
    for field, wanted in filters.items():
        if not isinstance(field, str) or not FILTER_FIELD.fullmatch(field):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreInputError(f"filter field {str(field)[:80]!r} must match {FILTER_FIELD.pattern}")
        if wanted is not None and not isinstance(wanted, str | int | float | bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreInputError(f"filter {field}: a string, number, true, false or null")
    return dict(filters)


def value_matches(value: object, filters: Mapping[str, FilterValue]) -> bool:
    """Whether an item's JSON `value` is an object whose fields equal every filter.

    Numbers compare as numbers (`1` matches `1.0`); a string, `true`, `false` or `null` only
    matches itself (`true` is not `1`, `"1"` is not `1`).
    """
    if not filters:
        return True
    if not isinstance(value, dict):
        return False
    fields = cast(dict[str, object], value)
    return all(field in fields and _same(fields[field], wanted) for field, wanted in filters.items())


def _same(found: object, wanted: FilterValue) -> bool:
    if isinstance(found, bool) or isinstance(wanted, bool):
        return found is wanted
    if isinstance(found, int | float) and isinstance(wanted, int | float):
        return found == wanted
    return type(found) is type(wanted) and found == wanted


def check_limit(limit: int, most: int = MAX_SEARCH_LIMIT, what: str = "limit") -> int:
    """`limit`, if an integer from 1 to `most`.

    Raises:
        StoreInputError: `invalid_input` naming the range.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError(f"{what} must be an integer from 1 to {most}")
    return limit


def check_page_size(limit: int) -> int:
    """A list's page size, from 1 to `MAX_PAGE_SIZE`.

    Raises:
        StoreInputError: `invalid_input` naming the range.
    """
    return check_limit(limit, MAX_PAGE_SIZE)
