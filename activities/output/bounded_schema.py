"""JSON Schema validation whose cost and reach a client's schema cannot make unbounded.

A run's output schema comes from its client, so everything `jsonschema` would do with
it on the worker is bounded here:

- **Patterns** (`pattern`, `patternProperties`, and `additionalProperties` beside them)
  run on the `regex` engine with a time limit per match (`MATCH_TIMEOUT_S`; `regex` counts
  it in CPU time, so on a loaded machine a match may take longer by the clock), releasing
  the GIL, instead of `re`, which backtracks for as long as a pattern asks while holding
  it. A pattern whose counted repeats expand past `MAX_PATTERN_EXPANSION` steps (`regex`
  compiles them out, taking seconds) is refused when the run starts.
- **Total time**: every keyword checks one deadline (`VALIDATION_BUDGET_S` for all the
  candidates of one answer), so combinators and references cannot multiply the work
  without end; `uniqueItems` is linear, not quadratic. Callers run validation in a
  thread (`asyncio.to_thread`), so the worker's event loop never waits on it.
- **References**: only references inside the schema resolve (a `referencing` registry
  with no retrieval, plus the dialects' own meta-schemas): nothing is fetched or read.
  A `$ref` that points elsewhere is refused when the run starts (`invalid_schema`, by
  `activities.output.schema_refusals`).
- `format` is an annotation only (not asserted), as the JSON Schema default says.

`jsonschema` and `regex` are imported on first use: they cost a worker's start-up otherwise.
"""

from __future__ import annotations

import contextvars
import json
import re
import time
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, cast

VALIDATION_BUDGET_S = 2.0
"""The longest validating one answer against its schema may take (all its candidates together)."""
MATCH_TIMEOUT_S = 0.5
"""The longest one pattern match may take (within what is left of the budget)."""
MAX_PATTERN_EXPANSION = 100_000
"""How many steps a pattern's counted repeats may expand to (`(a{1000}){1000}` is 1,000,000)."""
MAX_REF_CHARS = 200
"""Characters of a refused `$ref` quoted back."""

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("schema_deadline", default=None)
_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


class SchemaTooCostly(Exception):
    """Validation ran past its budget (or one match past its time limit)."""


class Budget:
    """`with Budget(seconds):` bounds the validation done inside (in this thread or context)."""

    def __init__(self, seconds: float = VALIDATION_BUDGET_S) -> None:
        """Allow `seconds` from entering."""
        self._seconds = seconds
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> Budget:
        self._token = _deadline.set(time.monotonic() + self._seconds)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._token is not None:
            _deadline.reset(self._token)


def _left() -> float:
    """Seconds left of the budget (raises when it is spent; a large number when none is set)."""
    deadline = _deadline.get()
    if deadline is None:
        return VALIDATION_BUDGET_S
    left = deadline - time.monotonic()
    if left <= 0:
        raise SchemaTooCostly(f"validation took longer than {VALIDATION_BUDGET_S:g} s")
    return left


def pattern_expansion(pattern: str) -> int:
    """About how many steps `pattern`'s counted repeats expand to (what `regex` compiles them into)."""
    sums = [0]
    last = 1
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            sums[-1] += 1
            last = 1
            continue
        if char == "[":
            i = _class_end(pattern, i)
            sums[-1] += 1
            last = 1
            continue
        if char == "(":
            sums.append(0)
        elif char == ")" and len(sums) > 1:
            last = max(sums.pop(), 1)
            sums[-1] += last
        elif char == "{" and (count := _COUNT.match(pattern, i)) and count.group(1):
            times = min(int(count.group(1)[:12]), 10**12)
            sums[-1] += last * (times - 1)
            last *= max(times, 1)
            i = count.end()
            continue
        elif char not in "|*+?)":
            sums[-1] += 1
            last = 1
        i += 1
    return sum(sums)


def _class_end(pattern: str, start: int) -> int:
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used (too costly to compile, or not a regular expression), or None."""
    import regex

    if pattern_expansion(pattern) > MAX_PATTERN_EXPANSION:
        return (
            f"pattern {pattern[:MAX_REF_CHARS]!r} repeats too much: its counted repeats expand "
            f"past {MAX_PATTERN_EXPANSION:,} steps"
        )
    try:
        regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as error:
        return f"pattern {pattern[:MAX_REF_CHARS]!r} is not a regular expression: {error}"
    return None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, within the time limits.

    Raises:
        SchemaTooCostly: the match ran past its time limit, or the pattern is refused.
    """
    import regex

    problem = pattern_problem(pattern)
    if problem is not None:
        raise SchemaTooCostly(problem)
    try:
        return regex.search(pattern, text, timeout=min(MATCH_TIMEOUT_S, _left()), concurrent=True) is not None
    except TimeoutError:
        raise SchemaTooCostly(
            f"pattern {pattern[:MAX_REF_CHARS]!r} took longer than {MATCH_TIMEOUT_S:g} s to match"
        ) from None


def _canonical(value: Any) -> Any:
    """A hashable form under which JSON-equal values are equal (1 == 1.0, but True != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in cast(list[Any], value)))
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return ("object", frozenset((key, _canonical(item)) for key, item in items))
    return ("other", json.dumps(value, default=str))


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, _: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = [k for k in instance if k not in properties and not any(search(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        names = ", ".join(repr(key) for key in sorted(extras))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(map(repr, patterns))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for index, item in enumerate(instance):
            if index % 1_000 == 0:
                _left()
            key = _canonical(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


_OWN = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


def _on_budget(keyword: Any) -> Any:
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        _left()
        errors = keyword(validator, value, instance, schema)
        if errors is not None:
            yield from errors

    return checked


@cache
def _bounded_class(base: Any) -> Any:
    from jsonschema import validators

    table: dict[str, Any] = dict(base.VALIDATORS)
    table.update({name: own for name, own in _OWN.items() if name in table})
    extend: Any = cast(Any, validators).extend
    return extend(base, {name: _on_budget(keyword) for name, keyword in table.items()})


def validator_for(schema: Mapping[str, Any]) -> Any:
    """The `jsonschema` validator class for `schema` (by `$schema`; Draft 2020-12 by default).

    Raises:
        ValueError: `$schema` names a dialect `jsonschema` does not know.
    """
    from jsonschema import validators

    known: Any = cast(Any, validators).validator_for(dict(schema), default=None)
    if known is not None:
        return known
    if "$schema" in schema:
        raise ValueError(f"unknown $schema {str(schema['$schema'])[:MAX_REF_CHARS]!r}")
    return validators.Draft202012Validator


def bounded_validator(schema: Mapping[str, Any]) -> Any:
    """A validator of `schema` with bounded patterns and keywords, resolving references only inside it."""
    from referencing import Registry

    nothing_to_fetch = Registry[Any]()  # no `retrieve`: an unknown URI is unresolvable
    return _bounded_class(validator_for(schema))(dict(schema), registry=nothing_to_fetch)
