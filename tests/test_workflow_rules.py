"""Static rules for the packages workflow code runs: no I/O, clocks, randomness, threads or globals.

The worker runs workflows outside Temporal's sandbox by default (see
`worker.workflow_runner`), so nothing polices `workflows`, `contracts` and
`conversation` (`worker.WORKFLOW_PACKAGES`) at run time. These rules do, on every test
run: a banned import, call or `global` statement in those packages fails here with the
file and line. (The replay tests additionally run the workflows fully sandboxed, and
every other test runs them with a worker that caches no workflows.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from worker import WORKFLOW_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
BANNED_MODULES = {
    "time": "use workflow.now() / workflow.sleep()",
    "random": "use workflow.random()",
    "uuid": "use workflow.uuid4()",
    "threading": "no threads in workflow code",
    "subprocess": "no processes in workflow code",
    "socket": "no I/O in workflow code",
    "requests": "no I/O in workflow code",
    "httpx": "no I/O in workflow code",
    "aiohttp": "no I/O in workflow code",
    "litellm": "the LLM is an activity",
    "activities": "activities run in the worker, not in workflow code",
    "runtime": "runtime/ does I/O",
    "temporalio.client": "workflow code does not use the client",
    "secrets": "use workflow.random()",
    "pathlib": "no I/O in workflow code",
    "shutil": "no I/O in workflow code",
    "tempfile": "no I/O in workflow code",
}
BANNED_CALLS = {
    "datetime.now": "use workflow.now()",
    "datetime.utcnow": "use workflow.now()",
    "date.today": "use workflow.now()",
    "os.getenv": "no environment in workflow code",
    "os.environ.get": "no environment in workflow code",
    "os.urandom": "use workflow.random()",
    "open": "no I/O in workflow code",
    "print": "use workflow.logger",
    "input": "no I/O in workflow code",
}


def _python_files() -> list[Path]:
    return sorted(p for package in WORKFLOW_PACKAGES for p in (ROOT / package).rglob("*.py"))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _violations(path: Path, relative: str) -> list[str]:
    tree = ast.parse(path.read_text(), filename=relative)
    found: list[str] = []
    for node in ast.walk(tree):
        modules: list[str] = []
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        for module in modules:
            for banned, why in BANNED_MODULES.items():
                if module == banned or module.startswith(banned + "."):
                    found.append(f"{relative}:{line}: imports {module} ({why})")
        if isinstance(node, ast.Global):
            names = ", ".join(node.names)
            found.append(f"{relative}:{line}: global {names} (runs share modules: no mutable module state)")
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            for banned, why in BANNED_CALLS.items():
                dotted = "." in banned  # `datetime.now` also as `dt.datetime.now`; `open` only bare
                if name == banned or (dotted and name.endswith("." + banned)):
                    found.append(f"{relative}:{node.lineno}: calls {name} ({why})")
    return found


def test_the_rules_see_every_shared_package() -> None:
    files = {p.relative_to(ROOT).parts[0] for p in _python_files()}
    assert files == set(WORKFLOW_PACKAGES)


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_workflow_packages_do_no_io_clocks_or_randomness(path: Path) -> None:
    assert _violations(path, path.relative_to(ROOT).as_posix()) == []


def test_a_violation_is_reported_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "probe.py"
    bad.write_text(
        "import time\nfrom datetime import datetime\n\nx = datetime.now()\nbook.open()\nprint(x)\n"
        "def f():\n    global x\n"
    )
    assert _violations(bad, "workflows/probe.py") == [
        "workflows/probe.py:1: imports time (use workflow.now() / workflow.sleep())",
        "workflows/probe.py:4: calls datetime.now (use workflow.now())",
        "workflows/probe.py:6: calls print (use workflow.logger)",
        "workflows/probe.py:8: global x (runs share modules: no mutable module state)",
    ]
