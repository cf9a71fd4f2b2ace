"""Which folder may import which, and no import cycles: the folders show the architecture.

Every `.py` file under the product's folders is parsed with `ast`; every import counts,
at module level or inside a function (a lazy import is still a dependency), except
those under `if TYPE_CHECKING:`, which never run. The layering, lowest first:

- `contracts` and `conversation`: the wire types and the conversation model;
- `settings`: the deployment's settings from the environment (the one `SettingsError` and the
  readers of a variable, the worker's and clients' settings, the webhook and attachment policies),
  on those two only: every product folder but `workflows` may import it;
- `workflows`: deterministic workflow code, on those two only. Inside it, each workflow has a
  room (`ROOMS`: `workflows.run` for `ReActRun`, `workflows.session` for `AgentSession`,
  `workflows.background` for the two small ones, `ScheduledAsk` and `DeliverWebhook`); a room
  never imports another (a run and its session talk through Temporal only), and the shared
  modules at `workflows`' top import no room;
- `payloads`: the payload path (stores, claim check, codec, converter, redaction);
- `store`: the long-term store (memory items on SQLite or PostgreSQL), on contracts and settings;
- `with_start`: the one Update-with-start (start a workflow if needed, send it an Update), on
  contracts only, so that `clients` and `activities`, which may not import each other, share it;
- `live`: the live channel (on contracts and settings);
- `activities` and `clients` (on payloads, the live channel and the store):
  the worker's I/O and the typed client;
- `hosting`: connecting, the dev server, the worker process, the workflow runner;
- `worker.py`, `client.py` and `cli/` on top, and `testing.py` (the public testing module),
  which nothing else in the product imports.
- `gateway` (and `gateway.py`) beside them, on the typed client. Inside it each protocol adapter
  has a room (`GATEWAY_ROOMS`: AG-UI, A2A, the AI SDK, MCP, the chat page, threads, schedules,
  memory, usage, the report page): a room imports the shared gateway parts and itself, never another room; the
  shared parts import no room, except `gateway.app`, which assembles them, and none imports a part above it
  (`GATEWAY_LAYERS`: the refusals, the server's plumbing and the feed; identity; the settings,
  the owners and a request's input; the agent catalog; the context; the guard; the request core;
  the rooms; the app).
- `activities` in rooms by what they do (`ACTIVITY_ROOMS`), and at most `MAX_LOOSE_MODULES`
  modules loose at the top of `activities/` and of `gateway/`.

No import circle between modules, not even one that only type checking follows.

Tests, benchmarks and scripts import anything, and nothing in the product imports them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_BOTTOM = frozenset({"contracts", "conversation"})
_SETTINGS = _BOTTOM | {"settings"}
_PAYLOAD_PATH = _SETTINGS | {"payloads"}
_WITH_START = frozenset({"with_start"})
_BELOW_HOSTING = _PAYLOAD_PATH | _WITH_START | {"workflows", "activities", "clients", "store"}
_PRODUCT = _BELOW_HOSTING | {"hosting", "live", "worker", "client", "cli"}

MAY_IMPORT: dict[str, frozenset[str]] = {
    "contracts": _BOTTOM,
    "conversation": _BOTTOM,
    "workflows": _BOTTOM | {"workflows"},
    "settings": _SETTINGS,
    "payloads": _PAYLOAD_PATH,
    "store": _SETTINGS | {"store"},
    "with_start": _BOTTOM | _WITH_START,
    "activities": _PAYLOAD_PATH | _WITH_START | {"activities", "live", "store"},
    "clients": _PAYLOAD_PATH | _WITH_START | {"clients", "live", "store"},
    "live": _SETTINGS | {"live"},
    "hosting": _BELOW_HOSTING | {"hosting", "live"},
    "worker": _PRODUCT,
    "client": _PRODUCT,
    "cli": _PRODUCT,
    "testing": _PRODUCT | {"testing"},
    "gateway": _PAYLOAD_PATH | _WITH_START | {"clients", "hosting", "activities", "gateway", "live", "store"},
}
"""For each product folder (or top-level module), the first-party folders it may import."""

ROOMS = ("workflows.background", "workflows.eval", "workflows.run", "workflows.session")
"""The workflows' rooms: each imports the shared `workflows.*` modules and itself, never another room."""
GATEWAY_ROOMS = (
    "gateway.a2a",
    "gateway.agents",
    "gateway.agui",
    "gateway.aisdk",
    "gateway.chat",
    "gateway.files",
    "gateway.evals",
    "gateway.mcp",
    "gateway.memory",
    "gateway.report",
    "gateway.schedules",
    "gateway.threads",
    "gateway.usage",
)
"""The gateway's protocol adapters: each imports the shared `gateway.*` modules and itself, never another."""
GATEWAY_SHARED_PACKAGES = (
    "gateway.core",
    "gateway.feed",
    "gateway.guard",
    "gateway.identity",
    "gateway.server",
)
"""Packages of the gateway that are shared parts (the request core, the feed, the guard, identity,
the server's plumbing), not rooms."""
GATEWAY_ASSEMBLY = frozenset({"gateway.app"})
"""The shared gateway module that puts the rooms together (the app's routes)."""
GATEWAY_LAYERS: tuple[tuple[str, ...], ...] = (
    ("gateway.errors", "gateway.jsonrpc", "gateway.server", "gateway.feed"),
    ("gateway.identity",),
    ("gateway.settings", "gateway.owners", "gateway.http_input"),
    ("gateway.agent_catalog",),
    ("gateway.context",),
    ("gateway.guard",),
    ("gateway.core",),
    GATEWAY_ROOMS,
    ("gateway.app", "gateway"),
)
"""The gateway's parts, lowest first: a module imports its own layer's and lower ones, never higher."""

ACTIVITY_ROOMS = (
    "activities.background",
    "activities.evals",
    "activities.llm",
    "activities.memory",
    "activities.output",
    "activities.snapshots",
    "activities.tools",
)
"""The activities' rooms: the LLM call (its models in `activities.llm.models`), memory, structured
output, tools, snapshots and the archive, acting on its own."""
MAX_LOOSE_MODULES = 10
"""The most modules (beside `__init__.py`) at the top of `activities/` and of `gateway/`."""

NOT_PRODUCT = ("tests", "bench", "scripts")
"""What may import anything, and what no product folder may import."""

CYCLE_CHECKED = (*MAY_IMPORT, "bench")
"""Where no import cycle between modules may exist."""


@dataclass(frozen=True)
class Import:
    """One import statement's target, as a module of this repository."""

    importer: str
    module: str
    line: int


def module_name(path: Path) -> str:
    """`activities/llm/llm_call.py` -> `activities.llm.llm_call`; `payloads/__init__.py` -> `payloads`."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _first_party(name: str) -> str | None:
    """The repository module `name` is, or its nearest repository parent; None if not first-party."""
    parts = name.split(".")
    while parts:
        candidate = ROOT.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def _is_type_checking_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST, typing: bool = False) -> Iterator[ast.AST]:
    """Every node, skipping the bodies of `if TYPE_CHECKING:` (their `else:` does run) unless `typing`."""
    for child in ast.iter_child_nodes(tree):
        yield child
        if isinstance(child, ast.If) and _is_type_checking_guard(child) and not typing:
            for orelse in child.orelse:
                yield orelse
                yield from _runtime_nodes(orelse)
        else:
            yield from _runtime_nodes(child, typing)


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    # `from pkg import sub` imports the submodule `pkg.sub` when there is one.
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def imports_of(path: Path, source: str | None = None, typing: bool = False) -> list[Import]:
    """The first-party modules `path` imports when it runs (at any depth; under TYPE_CHECKING if `typing`)."""
    importer = module_name(path)
    tree = ast.parse(source if source is not None else path.read_text(), filename=str(path))
    found: dict[str, Import] = {}
    for node in _runtime_nodes(tree, typing):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = _targets(node, importer, path.name == "__init__.py")
        resolved = [m for m in (_first_party(n) for n in names) if m]
        if isinstance(node, ast.ImportFrom) and len(resolved) > 1:
            resolved.pop()  # the `from` package itself counts only if no name is a submodule
        for module in resolved:
            if module != importer:
                found.setdefault(module, Import(importer, module, node.lineno))
    return list(found.values())


def _files(folders: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        if (ROOT / f"{folder}.py").is_file():
            found.append(ROOT / f"{folder}.py")
        found.extend(sorted((ROOT / folder).rglob("*.py")))
    return found


def layer_violations(imports: list[Import]) -> list[str]:
    """Each import of a folder that its importer's folder may not import, as `importer -> module`."""
    found: list[str] = []
    for imp in imports:
        folder, target = imp.importer.split(".")[0], imp.module.split(".")[0]
        allowed = MAY_IMPORT.get(folder)
        if allowed is not None and target in {*MAY_IMPORT, *NOT_PRODUCT} and target not in allowed:
            found.append(f"{imp.importer}:{imp.line} imports {imp.module} ({folder} may not import {target})")
    return found


def _room_of(module: str, rooms: tuple[str, ...] = ROOMS) -> str | None:
    return next((room for room in rooms if module == room or module.startswith(f"{room}.")), None)


def room_violations(
    imports: list[Import],
    folder: str = "workflows",
    rooms: tuple[str, ...] = ROOMS,
    assembly: frozenset[str] = frozenset(),
) -> list[str]:
    """Each import of a room of `folder` from another room or from a shared module (but `assembly`)."""
    found: list[str] = []
    for imp in imports:
        if imp.importer.split(".")[0] != folder or imp.importer in assembly:
            continue
        home, target = _room_of(imp.importer, rooms), _room_of(imp.module, rooms)
        if target is None or target == home:
            continue
        where = f"room {home}" if home is not None else f"a shared {folder} module"
        found.append(f"{imp.importer}:{imp.line} imports {imp.module} ({where} may not import {target})")
    return found


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.module)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _all_imports(folders: tuple[str, ...], typing: bool = False) -> list[Import]:
    return [imp for path in _files(folders) for imp in imports_of(path, typing=typing)]


def _gateway_layer(module: str) -> int | None:
    """The index in `GATEWAY_LAYERS` of the part `module` belongs to (its longest matching prefix).

    The bare `gateway` names the package's `__init__` only: a new module needs a place in a layer.
    """
    matches = [
        (len(prefix), index)
        for index, layer in enumerate(GATEWAY_LAYERS)
        for prefix in layer
        if module == prefix or ("." in prefix and module.startswith(f"{prefix}."))
    ]
    return max(matches)[1] if matches else None


def upward_imports(imports: list[Import]) -> list[str]:
    """Each import inside `gateway/` of a part above the importer's (`GATEWAY_LAYERS`)."""
    found: list[str] = []
    for imp in imports:
        home, target = _gateway_layer(imp.importer), _gateway_layer(imp.module)
        if home is not None and target is not None and target > home:
            found.append(f"{imp.importer}:{imp.line} imports {imp.module} (a layer above it)")
    return found


def loose_modules(folder: str) -> list[str]:
    """The modules directly in `folder` (not in a room), but its `__init__.py`."""
    return sorted(p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py")


def test_every_product_folder_has_a_layer() -> None:
    first_party = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    first_party |= {p.stem for p in ROOT.glob("*.py")}
    assert first_party - set(MAY_IMPORT) <= set(NOT_PRODUCT)


@pytest.mark.parametrize("folder", list(MAY_IMPORT))
def test_no_folder_imports_a_higher_one(folder: str) -> None:
    assert _files((folder,)), folder
    assert layer_violations(_all_imports((folder,))) == []


def test_the_workflow_rooms_are_named() -> None:
    folders = {f"workflows.{p.name}" for p in (ROOT / "workflows").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(ROOMS)


def test_no_room_imports_another_and_shared_workflow_code_imports_none() -> None:
    assert room_violations(_all_imports(("workflows",))) == []


def test_the_gateway_rooms_are_named() -> None:
    packages = {f"gateway.{p.name}" for p in (ROOT / "gateway").iterdir() if (p / "__init__.py").is_file()}
    assert packages - set(GATEWAY_SHARED_PACKAGES) == set(GATEWAY_ROOMS)


def test_no_protocol_adapter_imports_another_and_the_core_imports_none() -> None:
    imports = _all_imports(("gateway",))
    assert room_violations(imports, "gateway", GATEWAY_ROOMS, GATEWAY_ASSEMBLY) == []


def test_an_adapter_importing_another_and_the_core_importing_an_adapter_are_found() -> None:
    gateway = ROOT / "gateway"
    imports = imports_of(gateway / "mcp" / "server.py", "from gateway.a2a.stream import follow_run\n")
    imports += imports_of(gateway / "core" / "requests.py", "from gateway.agui import render\n")
    imports += imports_of(gateway / "app.py", "from gateway.mcp import McpEndpoint\n")
    assert room_violations(imports, "gateway", GATEWAY_ROOMS, GATEWAY_ASSEMBLY) == [
        "gateway.mcp.server:1 imports gateway.a2a.stream (room gateway.mcp may not import gateway.a2a)",
        "gateway.core.requests:1 imports gateway.agui.render "
        "(a shared gateway module may not import gateway.agui)",
    ]


def test_a_cross_room_import_and_a_shared_module_importing_a_room_are_found() -> None:
    workflows = ROOT / "workflows"
    imports = imports_of(workflows / "run" / "loop.py", "from workflows.session.thread import X\n")
    lazy = "def f():\n    from workflows.run import ledger\n"
    imports += imports_of(workflows / "session" / "loop.py", lazy)
    shared = "import workflows.run.record\nfrom workflows import failures\n"
    imports += imports_of(workflows / "op_slot.py", shared)
    imports += imports_of(workflows / "run" / "tool_step.py", "from workflows.op_slot import OpSlot\n")
    assert room_violations(imports) == [
        "workflows.run.loop:1 imports workflows.session.thread "
        "(room workflows.run may not import workflows.session)",
        "workflows.session.loop:2 imports workflows.run.ledger "
        "(room workflows.session may not import workflows.run)",
        "workflows.op_slot:1 imports workflows.run.record "
        "(a shared workflows module may not import workflows.run)",
    ]


def test_no_import_cycles() -> None:
    assert import_cycles(_all_imports(CYCLE_CHECKED)) == []


def test_no_import_circle_even_through_type_checking_imports() -> None:
    circles = import_cycles(_all_imports(CYCLE_CHECKED, typing=True))
    assert circles == []


def test_every_gateway_module_has_a_layer_and_none_imports_a_higher_one() -> None:
    modules = [module_name(path) for path in sorted((ROOT / "gateway").rglob("*.py"))]
    assert [module for module in modules if _gateway_layer(module) is None] == []
    gateway_files = sorted((ROOT / "gateway").rglob("*.py"))
    assert upward_imports([imp for path in gateway_files for imp in imports_of(path)]) == []


def test_an_upward_gateway_import_is_found() -> None:
    gateway = ROOT / "gateway"
    imports = imports_of(gateway / "identity" / "oidc.py", "from gateway.settings import PRINCIPAL_PATTERN\n")
    imports += imports_of(gateway / "context.py", "def f():\n    from gateway.core import RequestCore\n")
    imports += imports_of(gateway / "core" / "requests.py", "from gateway.identity.scopes import ASK\n")
    assert upward_imports(imports) == [
        "gateway.identity.oidc:1 imports gateway.settings (a layer above it)",
        "gateway.context:2 imports gateway.core (a layer above it)",
    ]


def test_the_activity_rooms_are_named() -> None:
    folders = {p.name for p in (ROOT / "activities").iterdir() if (p / "__init__.py").is_file()}
    assert {f"activities.{name}" for name in folders} == set(ACTIVITY_ROOMS)


@pytest.mark.parametrize("folder", ["activities", "gateway"])
def test_few_modules_are_loose_at_the_top(folder: str) -> None:
    assert len(loose_modules(folder)) <= MAX_LOOSE_MODULES, loose_modules(folder)


def test_a_lazy_upward_import_and_a_lazy_cycle_are_found() -> None:
    codec = ROOT / "payloads" / "codec.py"
    react_run = ROOT / "workflows" / "run" / "react_run.py"
    lazy = "def f():\n    from activities import llm\n    from workflows.run import react_run\n"
    imports = imports_of(codec, lazy)
    imports += imports_of(
        react_run, "from payloads.codec import f\nimport clients.runs\nimport tests.helpers\n"
    )
    imports += imports_of(ROOT / "payloads" / "converter.py", "if TYPE_CHECKING:\n    import hosting\n")
    assert layer_violations(imports) == [
        "payloads.codec:2 imports activities.llm (payloads may not import activities)",
        "payloads.codec:3 imports workflows.run.react_run (payloads may not import workflows)",
        "workflows.run.react_run:1 imports payloads.codec (workflows may not import payloads)",
        "workflows.run.react_run:2 imports clients.runs (workflows may not import clients)",
        "workflows.run.react_run:3 imports tests.helpers (workflows may not import tests)",
    ]
    assert import_cycles(imports) == [["payloads.codec", "workflows.run.react_run"]]


def test_relative_imports_resolve_to_their_package() -> None:
    imports = imports_of(ROOT / "activities" / "probe.py", "from . import llm\nfrom .tools import X\n")
    assert [imp.module for imp in imports] == ["activities.llm", "activities.tools"]
