"""Junk JSON for the fuzz tests, and how to break one field of a payload (`Spec`, `broken`).

What a broken payload must get back is an `Expect`: `invalid_input`, or
`payload_too_large` when a broken field is over its size limit (see `tests.fuzz_strategies`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

KIB = 1024
INVALID = "invalid_input"
TOO_LARGE = "payload_too_large"


@dataclass(frozen=True)
class Expect:
    """What an Update must answer: a failure typed in `errors`, a rejected Ack in `reasons`, or any answer."""

    errors: frozenset[str] = frozenset()
    reasons: frozenset[str] = frozenset()
    answer: bool = False


def errors(*codes: str) -> Expect:
    return Expect(errors=frozenset(codes))


def reasons(*codes: str) -> Expect:
    return Expect(reasons=frozenset(codes))


# ---- JSON values -------------------------------------------------------------------------------

HUGE_INTS = st.sampled_from([2**53 + 1, 2**63, 2**64, -(2**70), 2**1100]) | st.integers(2**63, 2**200)
ODD_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0])
numbers = st.integers(-(10**6), 10**6) | HUGE_INTS | ODD_FLOATS | st.floats()
scalars = st.none() | st.booleans() | numbers | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def nested(depth: int) -> Any:
    """`depth` levels of alternating objects and arrays around a 0."""
    value: Any = 0
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


deep_values = st.integers(20, 180).map(nested)
"""Deep, but within the 200 levels the worker's JSON parser takes (so the handler sees it)."""
SURROGATES = st.sampled_from(["\ud800", "\udfff", "a\ud83d", "\ude42b"])
unparseable = st.integers(210, 400).map(nested) | SURROGATES | SURROGATES.map(lambda s: {"content": s})
"""JSON the worker's parser refuses: nesting past 200 levels, lone surrogates (a cut emoji from JS)."""
NOT_TEXT = (
    numbers
    | st.booleans()
    | st.lists(scalars, max_size=3)
    | st.dictionaries(st.text(max_size=4), scalars, max_size=2)
    | deep_values
)
NOT_NUMBER = (
    st.sampled_from(["", "abc", "1/2", "🙂", "12abc"])
    | st.lists(scalars, max_size=2)
    | st.dictionaries(st.text(max_size=4), scalars, max_size=2)
    | deep_values
)
NOT_OBJECT = (
    numbers
    | st.booleans()
    | st.text(max_size=8)
    | st.lists(scalars, max_size=3)
    | deep_values.map(lambda v: [v])
)


# ---- field specs: what breaks a field, and whether the break is a size problem ---------------------


@dataclass(frozen=True)
class Spec:
    """How to break one field: `wrong` (type or range, `invalid_input`), `oversized` (`payload_too_large`)."""

    wrong: SearchStrategy[Any]
    oversized: SearchStrategy[Any] | None = None


def text(limit: int | None, *, required: bool = False) -> Spec:
    wrong = NOT_TEXT | st.none() if required else NOT_TEXT
    if limit is None:
        return Spec(wrong)
    return Spec(wrong, st.integers(1, 64).map(lambda extra: "x" * (limit + extra)))


def ident(*, required: bool = False) -> Spec:
    return text(200, required=required)


def integer(low: int, high: int | None = None, *, optional: bool = False) -> Spec:
    outside = (
        st.integers(max_value=low - 1) | st.floats(0.1, 0.9) | st.sampled_from([math.nan, math.inf, 2.5])
    )
    if high is not None:
        outside = outside | st.integers(min_value=high + 1) | HUGE_INTS.filter(lambda n: n > high)
    return Spec(NOT_NUMBER | outside if optional else NOT_NUMBER | outside | st.none())


def real(low: float, high: float, *, above_low: bool = False) -> Spec:
    """A float in [low, high] (`above_low`: in (low, high]); NaN, infinities and huge integers are out."""
    outside = st.floats(max_value=low, exclude_max=not above_low) | st.floats(
        min_value=high, exclude_min=True
    )
    odd = ODD_FLOATS.filter(lambda f: math.isnan(f) or not low <= f <= high)
    return Spec(NOT_NUMBER | outside | odd | st.just(2**1100))


def json_object(limit: int, *, nullable: bool = False) -> Spec:
    """A JSON object field of at most `limit` bytes (`nullable`: null is valid, so never drawn as wrong)."""
    wrong = NOT_OBJECT if nullable else NOT_OBJECT | st.none()
    return Spec(wrong, st.just({"big": "x" * (limit + 1)}))


def string_map(entries: int, key_chars: int, value_chars: int) -> Spec:
    bad_values = st.dictionaries(st.text(max_size=4), numbers | st.booleans() | st.lists(scalars), min_size=1)
    oversized = st.sampled_from(
        [
            {f"k{i}": "v" for i in range(entries + 1)},
            {"k" * (key_chars + 1): "v"},
            {"k": "v" * (value_chars + 1)},
        ]
    )
    return Spec(NOT_OBJECT | bad_values, oversized)


def name_list(names: int, chars: int) -> Spec:
    return Spec(
        NOT_OBJECT.filter(lambda v: not isinstance(v, list)) | st.lists(NOT_TEXT, min_size=1, max_size=2),
        st.sampled_from([["t"] * (names + 1), ["t" * (chars + 1)]]),
    )


def model(fields: dict[str, Spec], base: dict[str, Any]) -> Spec:
    """A nested model: wrong when not an object or a field inside is wrong; oversized likewise."""
    inner_wrong = broken(fields, base, oversized=False).map(lambda p: p[0])
    sized = {name: spec for name, spec in fields.items() if spec.oversized is not None}
    return Spec(
        NOT_OBJECT | inner_wrong, broken(sized, base, oversized=True).map(lambda p: p[0]) if sized else None
    )


UNKNOWN_KEYS = st.text(min_size=1, max_size=10).map(lambda k: f"zz_{k}")


@st.composite
def broken(
    draw: st.DrawFn, fields: dict[str, Spec], base: dict[str, Any], oversized: bool | None = None
) -> tuple[dict[str, Any], str]:
    """`base` with one or two fields broken and unknown fields added; the error code it must get."""
    payload = dict(base)
    names = draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=2, unique=True))
    code = INVALID
    for name in names:
        spec = fields[name]
        big = spec.oversized is not None and (oversized if oversized is not None else draw(st.booleans()))
        payload[name] = draw(spec.oversized if big and spec.oversized is not None else spec.wrong)
        code = TOO_LARGE if big else code
    payload.update(draw(st.dictionaries(UNKNOWN_KEYS, json_values | deep_values, max_size=2)))
    return payload, code
