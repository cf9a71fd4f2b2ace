"""Workflows that tests define in their own modules run outside the sandbox.

The sandbox imports a workflow's module afresh for each run. For a test module that import
goes through pytest's assertion rewriter, which parses the module's source on a worker thread;
CPython 3.11's AST constructor is not thread-safe (it failed a CI run's workflow task with
"AST constructor recursion depth mismatch"). A test that needs its workflow sandboxed keeps
it in a helper module pytest does not rewrite (`tests/sandbox_probe.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _sandboxed_workflows(source: str) -> list[int]:
    """Lines of `@workflow.defn` decorators that do not pass `sandboxed=False`."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call is not None else decorator
            if ast.unparse(target) != "workflow.defn":
                continue
            unsandboxed = call is not None and any(
                k.arg == "sandboxed" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in call.keywords
            )
            if not unsandboxed:
                lines.append(decorator.lineno)
    return lines


def test_workflows_in_test_modules_are_not_sandboxed() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for line in _sandboxed_workflows(path.read_text())
    ]
    assert not found, f"pass sandboxed=False (or move the workflow to a helper module): {found}"


def test_the_rule_sees_both_spellings() -> None:
    bare = "@workflow.defn\nclass A: ...\n"
    named = "@workflow.defn(name='B')\nclass B: ...\n"
    allowed = "@workflow.defn(name='C', sandboxed=False)\nclass C: ...\n"
    assert _sandboxed_workflows(bare) == [1]
    assert _sandboxed_workflows(named) == [1]
    assert _sandboxed_workflows(allowed) == []
