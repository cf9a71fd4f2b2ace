"""A safe arithmetic calculator tool: parsed with `ast`, evaluated node by node, never `eval`.

Model-written expressions are untrusted input, so only number literals,
arithmetic operators and parentheses are accepted, and sizes are bounded so
that an expression like `9**9**9` fails fast instead of hanging the worker.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from activities.tools.tool_errors import ToolFailure

Number = int | float

MAX_EXPRESSION_CHARS = 1_000
MAX_INT_BITS = 10_000
"""Largest integer magnitude (in bits, about 3,000 digits) an operand or result may have."""

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_DISALLOWED: dict[type[ast.AST], str] = {
    ast.Name: "names are",
    ast.Call: "function calls are",
    ast.Attribute: "attribute access is",
    ast.Subscript: "subscripts are",
    ast.Lambda: "lambdas are",
}


async def calculator(expression: str) -> int | float:
    """Evaluate an arithmetic expression and return its numeric result.

    Supports numbers, + - * / // % ** (power), unary + and -, and parentheses.

    Args:
        expression: The arithmetic expression, e.g. "(2 + 3) * 4 ** 2 / 8".
    """
    # Async on purpose: it is microseconds of work, which a thread hop would cost more than.
    return evaluate(expression)


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression (the calculator tool's work; see `calculator`).

    Raises:
        ToolFailure: the expression is invalid, too long, or too large to compute.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolFailure(f"expression is too long ({len(expression)} > {MAX_EXPRESSION_CHARS} characters)")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at char {exc.offset}" if exc.offset else ""
        raise ToolFailure(f"invalid expression: {exc.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ToolFailure(f"invalid expression: {exc}") from None
    try:
        result = _eval(tree.body)
    except ZeroDivisionError:
        raise ToolFailure("division by zero") from None
    except (OverflowError, RecursionError):
        raise ToolFailure("result is too large") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolFailure("result is too large")
    return result


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolFailure(f"unsupported literal {value!r}: only numbers are allowed")
        return _checked(value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    for kind, what in _DISALLOWED.items():
        if isinstance(node, kind):
            raise ToolFailure(f"{what} not allowed: only numbers and arithmetic operators")
    raise ToolFailure(f"unsupported syntax: {type(node).__name__}")


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse powers whose result would exceed the size bound, before computing them."""
    if abs(base) <= 1:
        return
    if isinstance(base, int) and isinstance(exponent, int):
        if exponent * base.bit_length() > MAX_INT_BITS:
            raise ToolFailure(f"result is too large: {base} ** {exponent} exceeds {MAX_INT_BITS} bits")
    elif exponent * math.log2(abs(base)) > 1024:
        # Beyond float range; pow() would raise OverflowError anyway.
        raise ToolFailure("result is too large")


def _checked(value: Number) -> Number:
    if isinstance(value, complex):
        raise ToolFailure("result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolFailure(f"result is too large (more than {MAX_INT_BITS} bits)")
    return value
