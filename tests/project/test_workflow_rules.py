"""Static rules for the packages workflow code runs: no I/O, clocks, randomness, threads or globals.

The worker runs workflows outside Temporal's sandbox by default (`hosting.sandbox`), so these
rules police `hosting.sandbox.WORKFLOW_PACKAGES` on every test run instead: a banned import, a
use of a banned name (followed through import aliases: after `from datetime import datetime as
D`, `D.now` is `datetime.datetime.now`), a `global` statement or a function changing a
module-level dict, list or set fails here with its file and line. Each probe below is a source
string fed to the same checker and must be flagged: a gap once found stays closed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from hosting.sandbox import WORKFLOW_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
NO_IO = "no I/O in workflow code"
NO_ENV = "no environment or process state in workflow code"
BANNED_MODULES = {
    "time": "use workflow.now() / workflow.sleep()",
    **dict.fromkeys(("random", "secrets"), "use workflow.random()"),
    "uuid": "use workflow.uuid4()",
    **dict.fromkeys(("os", "sys"), NO_ENV),
    **dict.fromkeys(("threading", "concurrent", "multiprocessing", "subprocess"), "no threads or processes"),
    **dict.fromkeys(
        (
            "socket",
            "ssl",
            "select",
            "urllib",
            "http.client",
            "http.server",
            "http.cookiejar",
            "ftplib",
            "smtplib",
        ),
        NO_IO,
    ),
    **dict.fromkeys(
        ("requests", "httpx", "aiohttp", "pathlib", "shutil", "tempfile", "io", "sqlite3"), NO_IO
    ),
    "logging": "use workflow.logger",
    "litellm": "the LLM is an activity",
    "activities": "activities run in the worker, not in workflow code",
    "payloads": "payloads/ does I/O",
    "clients": "clients/ use the Temporal client",
    "hosting": "hosting/ runs processes",
    "temporalio.client": "workflow code does not use the client",
}
BANNED_NAMES = {
    **dict.fromkeys(
        ("datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today"), "use workflow.now()"
    ),
    "datetime.date.today": "use workflow.now()",
    **dict.fromkeys(("os.environ", "os.environb", "os.getenv", "os.getpid"), NO_ENV),
    "os.urandom": "use workflow.random()",
    **dict.fromkeys(("open", "input", "breakpoint"), NO_IO),
    "print": "use workflow.logger",
    "temporalio.workflow.unsafe.imports_passed_through": "the sandbox imports product code (hosting.sandbox)",
}
"""Fully qualified names (after following import aliases) that workflow code may not use."""
LIBRARIES = {*sys.stdlib_module_names, "temporalio", "pydantic", "pydantic_core", *WORKFLOW_PACKAGES}
"""What workflow code may import: what Temporal's sandbox passes through, and the product's own."""
MUTABLE_FACTORIES = {"dict", "list", "set", "collections.defaultdict", "collections.OrderedDict"}
MUTATING_METHODS = {
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
    "add", "discard", "sort", "reverse", "move_to_end", "__setitem__", "__delitem__",
}  # fmt: skip
SHARED_STATE = "runs share modules: no mutable module state"


def _python_files() -> list[Path]:
    return sorted(p for package in WORKFLOW_PACKAGES for p in (ROOT / package).rglob("*.py"))


def _banned(name: str, table: dict[str, str]) -> str | None:
    """Why `name` (or a package it is in) is in `table`, or None."""
    for banned, why in table.items():
        if name == banned or name.startswith(banned + "."):
            return why
    return None


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Each name an import binds, to the fully qualified name it stands for ("" for other names bound)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound[node.arg] = ""  # a parameter called `input` is not the builtin
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound[node.id] = ""
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[node.name] = ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """`D.now` -> `datetime.datetime.now` when `D` is imported as `datetime.datetime`."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id) or None
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None


def _imports(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not node.module or node.level:
        return []
    return [f"{node.module}.{alias.name}" for alias in node.names]


def _module_containers(tree: ast.Module, aliases: dict[str, str]) -> set[str]:
    """Module-level names bound to a new dict, list or set."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            value, targets = statement.value, statement.targets
        elif isinstance(statement, ast.AnnAssign):
            value, targets = statement.value, [statement.target]
        else:
            continue
        literal = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp)
        factory = isinstance(value, ast.Call) and _qualified(value.func, aliases) in MUTABLE_FACTORIES
        if literal or factory:
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = function.args
    every = [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        arguments.vararg,
        arguments.kwarg,
    ]
    names = {a.arg for a in every if a is not None}
    names.update(n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _mutated(node: ast.expr, shared: set[str]) -> str | None:
    """The module-level container `node` changes, if it does."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        target = node.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATING_METHODS
    ):
        target = node.func.value
    else:
        return None
    while isinstance(target, ast.Subscript | ast.Attribute):  # `TABLE[k].append(x)` changes TABLE too
        target = target.value
    return target.id if isinstance(target, ast.Name) and target.id in shared else None


def _mutations(tree: ast.Module, aliases: dict[str, str]) -> set[tuple[int, str]]:
    containers = _module_containers(tree, aliases)
    found: set[tuple[int, str]] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        shared = containers - _locals(function)
        for node in ast.walk(function):
            if isinstance(node, ast.expr) and (name := _mutated(node, shared)):
                found.add((node.lineno, f"mutates module-level {name} ({SHARED_STATE})"))
    return found


def violations(source: str, relative: str) -> list[str]:
    """Every rule `source` (the file `relative`) breaks, as `file:line: what (why)`, in line order."""
    tree = ast.parse(source, filename=relative)
    aliases = _aliases(tree)
    attribute_bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = _mutations(tree, aliases)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name in _imports(node):
                why = _banned(name, BANNED_NAMES) or _banned(name, BANNED_MODULES)
                if why is None and name.split(".")[0] not in LIBRARIES:
                    why = "the sandbox would import it per run: only the stdlib, temporalio and pydantic"
                if why:
                    found.add((node.lineno, f"imports {name} ({why})"))
        elif isinstance(node, ast.Global):
            found.add((node.lineno, f"global {', '.join(node.names)} ({SHARED_STATE})"))
        elif isinstance(node, ast.Name | ast.Attribute) and id(node) not in attribute_bases:
            name = _qualified(node, aliases)  # the whole chain only: `os.environ.get`, not `os` again
            why = name and _banned(name, BANNED_NAMES)
            if name and why and not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
                found.add((node.lineno, f"uses {name} ({why})"))
    return [f"{relative}:{line}: {what}" for line, what in sorted(found)]


def test_the_rules_see_every_shared_package() -> None:
    files = {p.relative_to(ROOT).parts[0] for p in _python_files()}
    assert files == set(WORKFLOW_PACKAGES)


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_workflow_packages_do_no_io_clocks_or_randomness(path: Path) -> None:
    relative = path.relative_to(ROOT).as_posix()
    assert violations(path.read_text(), relative) == []


def test_a_violation_is_reported_with_its_line() -> None:
    source = (
        "import time\nfrom datetime import datetime\n\nx = datetime.now()\nbook.open()\nprint(x)\n"
        "def f():\n    global x\n"
    )
    assert violations(source, "workflows/probe.py") == [
        "workflows/probe.py:1: imports time (use workflow.now() / workflow.sleep())",
        "workflows/probe.py:4: uses datetime.datetime.now (use workflow.now())",
        "workflows/probe.py:6: uses print (use workflow.logger)",
        "workflows/probe.py:8: global x (runs share modules: no mutable module state)",
    ]


PROBES = {
    "os.environ[...]": ("import os\nkey = os.environ['KEY']\n", "2: uses os.environ"),
    "os.environ.get": ("import os as o\nkey = o.environ.get('KEY')\n", "2: uses os.environ.get"),
    "from os import environ": ("from os import environ\n", "1: imports os.environ"),
    "an aliased environ": ("from os import environ as env\nkey = env['KEY']\n", "2: uses os.environ"),
    "D.now()": ("from datetime import datetime as D\nD.now()\n", "2: uses datetime.datetime.now"),
    "today()": ("import datetime\ndatetime.datetime.today()\n", "2: uses datetime.datetime.today"),
    "dt.date.today()": ("import datetime as dt\nt = dt.date.today()\n", "2: uses datetime.date.today"),
    "a clock passed": ("from datetime import datetime\nclock = datetime.utcnow\n", "2: uses datetime"),
    "os.getpid()": ("import os\npid = os.getpid()\n", "2: uses os.getpid"),
    "from os import getpid": ("from os import getpid as pid\n", "1: imports os.getpid"),
    "import urllib.request": ("import urllib.request\n", "1: imports urllib.request"),
    "from urllib import parse": ("from urllib import parse\n", "1: imports urllib.parse"),
    "import http.client": ("import http.client as hc\n", "1: imports http.client"),
    "from http import client": ("from http import client\n", "1: imports http.client"),
    "another library": ("from numpy import ndarray\n", "1: imports numpy.ndarray"),
    "dict item set": ("CACHE = {}\ndef f(k, v):\n    CACHE[k] = v\n", "3: mutates module-level CACHE"),
    "dict updated": ("CACHE: dict[str, int] = {}\nasync def f():\n    CACHE.update(a=1)\n", "3: mutates"),
    "dict method": (
        "SEEN = dict()\nclass C:\n    def f(self):\n        SEEN.setdefault(1, 0)\n",
        "4: mutates",
    ),
    "dict item deleted": ("CACHE = {'a': 1}\ndef f():\n    del CACHE['a']\n", "3: mutates"),
    "dict item incremented": ("N = {'a': 1}\ndef f():\n    N['a'] += 1\n", "3: mutates module-level N"),
    "list appended": ("LOG = []\ndef f(x):\n    LOG.append(x)\n", "3: mutates module-level LOG"),
    "defaultdict": (
        "from collections import defaultdict as D\nB = D(list)\ndef f():\n    B[1].append(1)\n",
        "4: mutates",
    ),
    "passing product modules through the sandbox": (
        "from temporalio import workflow as w\nwith w.unsafe.imports_passed_through():\n    import x\n",
        "2: uses temporalio.workflow.unsafe.imports_passed_through",
    ),
}


@pytest.mark.parametrize(("source", "expected"), PROBES.values(), ids=list(PROBES))
def test_each_probe_is_flagged(source: str, expected: str) -> None:
    found = violations(source, "workflows/probe.py")
    assert any(v.startswith(f"workflows/probe.py:{expected}") for v in found), found


ALLOWED = {
    "a local of the same name": "CACHE = {}\ndef f():\n    CACHE = {}\n    CACHE['a'] = 1\n",
    "a parameter of the same name": "CACHE = {}\ndef f(CACHE):\n    CACHE['a'] = 1\n",
    "filled at import": "TABLE = {}\nTABLE['a'] = 1\nTABLE.update(b=2)\n",
    "read in a function": "TABLE = {'a': 1}\ndef f():\n    return TABLE.get('a')\n",
    "a method called open": "book.open()\nself.clock.now()\n",
    "a parameter called input": "def f(input):\n    return input.x\n",
    "workflow time": "from temporalio import workflow\nt = workflow.now()\n",
    "the datetime type": "from datetime import datetime, timedelta\nx: datetime | None = None\n",
}


@pytest.mark.parametrize("source", ALLOWED.values(), ids=list(ALLOWED))
def test_what_is_allowed_is_not_flagged(source: str) -> None:
    assert violations(source, "workflows/probe.py") == []
