"""Hypothesis strategies: junk for every signal, Update and start input of `ReActRun` and `AgentSession`.

The payload shapes are written out here from the documented contracts (README, `contracts/`),
not read from the pydantic models, so a model that loosens by accident is caught. Every
case is junk by construction and carries what the workflow must answer (`Expect`):

* a wrong argument count, a payload of the wrong JSON type, a null where an argument is
  required: `invalid_input`;
* a payload that starts valid and gets one or two fields broken (wrong type, out of
  range, NaN or infinity, a huge integer, deep nesting), plus unknown fields:
  `invalid_input`, or `payload_too_large` when a broken field is over its size limit;
* JSON the worker cannot parse (nesting past 200 levels, a lone UTF-16 surrogate):
  a named rejection too, never a workflow task failing;
* payloads that decode but the workflow must refuse (blank content, an unknown tool, an
  op without an id, ...): a rejected `Ack` with its reason, or a named Update failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from tests.fuzz_payloads import RUN_HANDLERS, SESSION_HANDLERS, START_HANDLERS, Handler, Kind, Target
from tests.fuzz_values import (
    INVALID,
    NOT_OBJECT,
    TOO_LARGE,
    Expect,
    broken,
    errors,
    json_values,
    unparseable,
)

__all__ = ["Case", "Expect", "Target", "cases", "start_inputs"]


@dataclass(frozen=True)
class Case:
    """One junk input for one handler; `counted` is the run trace's rejection counter it must bump."""

    target: Target
    kind: Kind
    name: str
    args: list[Any]
    expect: Expect
    counted: str | None = None


# ---- cases -------------------------------------------------------------------------------------

Shape = Literal["broken", "arity", "top", "unparseable", "refused", "defaults"]
SHAPES: list[Shape] = [
    "broken",
    "broken",
    "broken",
    "broken",
    "arity",
    "top",
    "unparseable",
    "refused",
    "defaults",
]
TOP_JUNK = NOT_OBJECT | st.binary(max_size=8) | st.just("x" * 200_001)


@st.composite
def junk_args(draw: st.DrawFn, handler: Handler) -> tuple[Shape, list[Any], Expect]:
    """Arguments for one call of `handler`, their shape, and what the call must answer."""
    shape = draw(st.sampled_from(SHAPES))
    if shape == "refused" and handler.refused:
        payload, expect = draw(st.sampled_from(handler.refused))
        return shape, [payload], expect
    if shape == "defaults" and handler.defaults is not None:
        return shape, draw(st.sampled_from([[], [None]])), handler.defaults
    if shape == "arity":
        extra = draw(st.lists(json_values | st.just(handler.base), min_size=1, max_size=2))
        return shape, [handler.base, *extra], errors(INVALID)
    if shape == "top":
        return shape, [draw(TOP_JUNK)], errors(INVALID)
    if shape == "unparseable":
        return shape, [draw(unparseable)], errors(INVALID, TOO_LARGE)
    payload, code = draw(broken(handler.fields, handler.base))
    return "broken", [payload], errors(code)


@st.composite
def cases(draw: st.DrawFn, target: Target) -> Case:
    """One junk call of a signal or Update of `target`."""
    handlers = RUN_HANDLERS if target == "run" else SESSION_HANDLERS
    name = draw(st.sampled_from(sorted(handlers)))
    handler = handlers[name]
    kind = draw(st.sampled_from(handler.kinds))
    shape, args, expect = draw(junk_args(handler))
    counted: str | None = None
    if shape in ("refused", "defaults"):
        counted = handler.counted
    elif kind == "signal":
        counted = "input_rejected"
    return Case(target, kind, name, args, expect, counted)


TARGETS: tuple[Target, ...] = ("run", "session")
start_inputs = st.sampled_from(TARGETS).flatmap(
    lambda target: junk_args(START_HANDLERS[target]).map(lambda junk: (target, junk[1], junk[2]))
)
"""(workflow, start arguments, the error its one failure must carry)."""
