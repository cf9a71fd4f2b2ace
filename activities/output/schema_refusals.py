"""What makes a client's output schema unsafe to apply, named when the run starts (`invalid_schema`).

A `$ref` (or `$dynamicRef`, `$recursiveRef`) that does not resolve inside the schema (or
to a dialect's meta-schema, held in memory) is refused: the worker never fetches a URL or
reads a file a schema names. So is a pattern too costly to compile (see
`activities.output.bounded_schema`), and `unevaluatedProperties` beside `patternProperties`,
which `jsonschema` would match with Python's `re`, unbounded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from activities.output.bounded_schema import MAX_REF_CHARS, pattern_problem

_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_DATA_KEYWORDS = frozenset({"enum", "const", "examples", "default"})  # values there are data, not schemas


def reference_problem(schema: Mapping[str, Any]) -> str | None:
    """The first reference that does not resolve inside the schema (nothing is fetched), or None."""
    from jsonschema_specifications import REGISTRY  # pyright: ignore[reportMissingTypeStubs]
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012, specification_with

    try:
        dialect = schema.get("$schema")
        specification: Any = specification_with(dialect) if isinstance(dialect, str) else DRAFT202012
        meta_schemas: Any = REGISTRY  # the dialects' meta-schemas, in memory; no `retrieve`
        resolver = meta_schemas.resolver_with_root(specification.create_resource(dict(schema)))
        for scope, ref in _references(schema, resolver, specification):
            try:
                scope.lookup(ref)
            except Unresolvable:
                shown = ref if len(ref) <= MAX_REF_CHARS else ref[: MAX_REF_CHARS - 1] + "…"
                return (
                    f"$ref {shown!r} does not point inside the schema: only references within "
                    "the schema are resolved (nothing is fetched or read)"
                )
    except (Unresolvable, ValueError, TypeError, RecursionError) as error:
        return f"the schema's references cannot be resolved: {type(error).__name__}"
    return None


def _references(node: Any, resolver: Any, specification: Any) -> Iterator[tuple[Any, str]]:
    """Each reference of the schema with the resolver of its scope (its nearest `$id`)."""
    if isinstance(node, list):
        for item in cast(list[Any], node):
            yield from _references(item, resolver, specification)
        return
    if not isinstance(node, dict):
        return
    mapping = cast(dict[str, Any], node)
    if isinstance(mapping.get("$id"), str):
        resolver = resolver.in_subresource(specification.create_resource(mapping))
    for keyword in _REF_KEYWORDS:
        ref = mapping.get(keyword)
        if isinstance(ref, str):
            yield resolver, ref
    for key, value in mapping.items():
        if key not in _DATA_KEYWORDS:
            yield from _references(value, resolver, specification)


def patterns_of(node: Any) -> Iterator[str]:
    """Every pattern of the schema: `pattern` values and `patternProperties` keys."""
    if isinstance(node, list):
        for item in cast(list[Any], node):
            yield from patterns_of(item)
        return
    if not isinstance(node, dict):
        return
    mapping = cast(dict[str, Any], node)
    if isinstance(mapping.get("pattern"), str):
        yield mapping["pattern"]
    properties = mapping.get("patternProperties")
    if isinstance(properties, dict):
        yield from cast(dict[str, Any], properties)
    for key, value in mapping.items():
        if key not in _DATA_KEYWORDS:
            yield from patterns_of(value)


def uses_keyword(node: Any, keyword: str) -> bool:
    """Whether `keyword` appears anywhere in the schema (outside data keywords)."""
    if isinstance(node, list):
        return any(uses_keyword(item, keyword) for item in cast(list[Any], node))
    if not isinstance(node, dict):
        return False
    mapping = cast(dict[str, Any], node)
    return keyword in mapping or any(
        uses_keyword(value, keyword) for key, value in mapping.items() if key not in _DATA_KEYWORDS
    )


def bounded_problem(schema: Mapping[str, Any]) -> str | None:
    """What makes `schema` unsafe to apply here (an outside reference, a costly pattern), or None."""
    for pattern in patterns_of(schema):
        problem = pattern_problem(pattern)
        if problem is not None:
            return problem
    if uses_keyword(schema, "unevaluatedProperties") and uses_keyword(schema, "patternProperties"):
        return "unevaluatedProperties together with patternProperties is not supported here"
    return reference_problem(schema)
