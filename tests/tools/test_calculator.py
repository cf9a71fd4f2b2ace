"""The calculator tool: arithmetic only, bounded, with clear failures."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.testing import ActivityEnvironment

from activities import ToolActivities, ToolFailure, default_registry
from activities.tools.calculator import evaluate
from contracts import ToolCallRequest
from conversation import ToolCall


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("(2 + 3) * 4 ** 2 / 8", 10.0),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("-3 ** 2", -9),
        ("+4", 4),
        ("2 ** -1", 0.5),
        ("1.5 * 2", 3.0),
        ("1e3 + 1", 1001.0),
        ("  ((1))  ", 1),
        ("2 ** 100", 2**100),
    ],
)
def test_arithmetic(expression: str, expected: float) -> None:
    result = evaluate(expression)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "function calls are not allowed"),
        ("x + 1", "names are not allowed"),
        ("(1).real", "attribute access is not allowed"),
        ("[1, 2][0]", "subscripts are not allowed"),
        ("[1, 2]", "unsupported syntax: List"),
        ("1 < 2", "unsupported syntax: Compare"),
        ("'a' * 3", "unsupported literal 'a'"),
        ("True + 1", "unsupported literal True"),
        ("1j", "unsupported literal 1j"),
        ("1 +", "invalid expression"),
        ("", "invalid expression"),
        ("1/0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("9**9**9", "result is too large"),
        ("10 ** 10 ** 10", "result is too large"),
        ("2 ** 10000 * 2 ** 10000", "result is too large"),
        ("10.0 ** 400", "result is too large"),
        ("2 ** 5000 * 1.0", "result is too large"),
        ("1e308 * 10", "result is too large"),
        ("(-8) ** 0.5", "not a real number"),
        ("1 + " * 400 + "1", "expression is too long"),
    ],
)
def test_rejections(expression: str, message: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolFailure, match=message) as caught:
        evaluate(expression)
    assert time.monotonic() - started < 1
    assert not caught.value.retryable
    assert caught.value.type == "tool_error"


OPS: dict[str, Callable[[int, int], int]] = {"+": operator.add, "-": operator.sub, "*": operator.mul}


@given(st.integers(-(10**12), 10**12), st.sampled_from(sorted(OPS)), st.integers(-(10**12), 10**12))
def test_matches_python_integer_arithmetic(a: int, op: str, b: int) -> None:
    assert evaluate(f"{a} {op} ({b})") == OPS[op](a, b)


async def test_calculator_through_run_tool() -> None:
    activities = ToolActivities(default_registry())

    async def run(arguments: str) -> tuple[bool, object]:
        request = ToolCallRequest(call=ToolCall(id="c1", name="calculator", arguments=arguments))
        outcome = await ActivityEnvironment().run(activities.run_tool, request)
        return outcome.ok, outcome.result if outcome.ok else outcome.error and outcome.error.message

    assert await run('{"expression": "6 * 7"}') == (True, 42)
    assert await run('{"expression": "9**9**9"}') == (
        False,
        "result is too large: 9 ** 387420489 exceeds 10000 bits",
    )
