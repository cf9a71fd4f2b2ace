"""Users' own tools, loaded into the worker without forking: `worker.py --tools mypackage.tools`.

A tools module is any importable module (installed, or on `PYTHONPATH`) that defines
exactly one of:

- `register(registry)`: a function that registers its tools on the `ToolRegistry` it is given;
- `registry`: a `ToolRegistry` holding its tools;
- `TOOLS`: a list of tool functions (each registered under its own name).

Its tools join the built-in ones (`calculator`). Every problem is a `ToolLoadError`,
one line naming the module: it cannot be imported, it registers nothing, or a tool
name is already taken (by a built-in or by another module). Nothing is registered
from a module that fails.

Agent profiles load the same way (`worker.py --agents mypackage.agents`): the module's
`agents` attribute, or the one `module:attr` names, must be an `AgentProfiles`; every
problem is a `ToolLoadError` naming `--agents` and the module.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, Self, TypeVar, cast

from activities.tools.agent_profiles import AgentProfiles
from activities.tools.mcp_config import McpServerConfig, load_mcp_config, merge_configs
from activities.tools.tool_registry import ToolRegistry, default_registry

log = logging.getLogger(__name__)
R = TypeVar("R")

TOOLS_ENV = "REACT_TOOLS"
MCP_CONFIG_ENV = "REACT_MCP_CONFIG"
AGENTS_ENV = "REACT_AGENTS"
AGENTS_ATTRIBUTE = "agents"
CONVENTIONS = ("register", "registry", "TOOLS")
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_HOW = "define register(registry), a ToolRegistry named `registry`, or a TOOLS list (see docs/tools.md)"


class ToolLoadError(ValueError):
    """A tools module that cannot be used; the message is one line naming it."""

    def __init__(self, module: str, problem: str, flag: str = "--tools") -> None:
        super().__init__(f"{flag} {module}: {problem}")
        self.module = module


def option_values(
    flags: list[str] | None, variable: str, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The values of a repeatable flag, else of its comma-separated environment variable.

    Flags replace the variable; empty items are dropped and repeats kept once, in order.
    """
    env = os.environ if environ is None else environ
    raw = flags if flags else env.get(variable, "").split(",")
    return list(dict.fromkeys(value.strip() for value in raw if value.strip()))


def build_tool_registry(modules: Iterable[str]) -> ToolRegistry:
    """The built-in tools plus the tools of every module, in order.

    Raises:
        ToolLoadError: A module cannot be imported, registers nothing, or clashes.
    """
    registry = default_registry()
    origins = dict.fromkeys(registry.names(), "the built-in tools")
    for module in modules:
        added = load_tool_module(registry, module, origins)
        log.info("tools from %s: %s", module, ", ".join(added))
        origins.update(dict.fromkeys(added, f"--tools {module}"))
    return registry


def load_tool_module(
    registry: ToolRegistry, module: str, origins: Mapping[str, str] | None = None
) -> list[str]:
    """Import `module` and add its tools to `registry` (all or none).

    Args:
        registry: Where the tools go.
        module: A dotted module name.
        origins: Who registered the names already in `registry`, for clash messages.

    Returns:
        The names it added, sorted.

    Raises:
        ToolLoadError: See the module docstring.
    """
    staged = _collect(module, _import(module))
    if not staged.names():
        raise ToolLoadError(module, f"registers no tools; {_HOW}")
    taken = [name for name in staged.names() if name in registry]
    if taken:
        who = (origins or {}).get(taken[0], "another module")
        raise ToolLoadError(module, f"tool {taken[0]!r} is already registered (by {who}); rename one of them")
    registry.include(staged)
    return staged.names()


def load_mcp_servers(paths: Iterable[str]) -> dict[str, McpServerConfig]:
    """The enabled MCP servers of every config file.

    Raises:
        McpConfigError: A file is unreadable or invalid, or two files name the same server.
    """
    return merge_configs([load_mcp_config(path) for path in paths])


def build_agent_profiles(specs: Iterable[str]) -> AgentProfiles:
    """The agent profiles of every `module` or `module:attr`, in order (none: an empty registry).

    Raises:
        ToolLoadError: A module cannot be imported, the attribute is missing or not an
            `AgentProfiles`, or two of them register the same name.
    """
    return merge_registries(specs, AgentProfiles(), load_agent_profiles, "--agents")


class _Registry(Protocol):
    def include(self, other: Self, /) -> None: ...
    def names(self) -> list[str]: ...


G = TypeVar("G", bound=_Registry)


def merge_registries(specs: Iterable[str], merged: G, load: Callable[[str], G], flag: str) -> G:
    """`merged` with the registry of every spec `load` loads, in order (a name twice: `ToolLoadError`)."""
    for spec in specs:
        loaded = load(spec)
        try:
            merged.include(loaded)
        except ValueError as exc:
            raise ToolLoadError(spec, f"{exc} (by an earlier {flag})", flag) from None
        log.info("%s %s: %s", flag, spec, ", ".join(loaded.names()))
    return merged


def load_agent_profiles(spec: str) -> AgentProfiles:
    """The `AgentProfiles` that `spec` names: `module` (its `agents` attribute) or `module:attr`.

    Raises:
        ToolLoadError: See `build_agent_profiles`.
    """
    how = f"define `{AGENTS_ATTRIBUTE} = AgentProfiles()` (activities.tools.agent_profiles)"
    how += " and register profiles"
    value = load_registry(spec, "--agents", AGENTS_ATTRIBUTE, AgentProfiles, how)
    if not value.names():
        attribute = spec.partition(":")[2] or AGENTS_ATTRIBUTE
        raise ToolLoadError(spec, f"{attribute!r} registers no agent profiles", "--agents")
    return value


def load_registry(spec: str, flag: str, default_attribute: str, kind: type[R], how: str) -> R:
    """The `kind` object that `spec` names: `module` (its `default_attribute`) or `module:attr`.

    The one rule of the worker's registry flags (`--agents`, `--transformers`); `how` says
    what to define when the attribute is missing.

    Raises:
        ToolLoadError: The spec is malformed, the module cannot be imported, or the
            attribute is missing or not a `kind`.
    """
    module, _, attribute = spec.partition(":")
    attribute = attribute or default_attribute
    if not attribute.isidentifier():
        raise ToolLoadError(spec, f"{attribute!r} is not an attribute name (use module or module:attr)", flag)
    loaded = _import(module, flag, spec)
    if not hasattr(loaded, attribute):
        raise ToolLoadError(spec, f"the module has no {attribute!r}; {how}, or name one as module:attr", flag)
    value: object = getattr(loaded, attribute)
    if not isinstance(value, kind):
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        raise ToolLoadError(
            spec, f"{attribute!r} is a {type(value).__name__}, not {article} {kind.__name__}", flag
        )
    return value


def _import(module: str, flag: str = "--tools", spec: str | None = None) -> object:
    label = spec or module
    if not _MODULE_NAME.fullmatch(module):
        raise ToolLoadError(label, "not a dotted module name (e.g. mypackage.tools)", flag)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(f"{exc.name}.")):
            raise ToolLoadError(
                label, f"no module named {exc.name!r} (install it, or add its folder to PYTHONPATH)", flag
            ) from None
        raise ToolLoadError(label, f"importing it failed: {_one_line(exc)}", flag) from None
    except Exception as exc:  # a user's module can raise anything at import
        raise ToolLoadError(label, f"importing it failed: {_one_line(exc)}", flag) from None


def _collect(module: str, loaded: object) -> ToolRegistry:
    """The module's tools in a fresh registry, by the one convention it follows."""
    present = [name for name in CONVENTIONS if hasattr(loaded, name)]
    if not present:
        raise ToolLoadError(module, f"registers no tools; {_HOW}")
    if len(present) > 1:
        raise ToolLoadError(module, f"defines {' and '.join(present)}; keep one of them")
    value: object = getattr(loaded, present[0])
    staged = ToolRegistry()
    try:
        if present[0] == "register":
            if not callable(value):
                raise ToolLoadError(module, "`register` is not a function")
            cast(Callable[[ToolRegistry], object], value)(staged)
        elif present[0] == "registry":
            if not isinstance(value, ToolRegistry):
                raise ToolLoadError(module, f"`registry` is a {type(value).__name__}, not a ToolRegistry")
            staged.include(value)
        else:
            _register_list(module, staged, value)
    except ToolLoadError:
        raise
    except Exception as exc:  # register() is user code
        raise ToolLoadError(module, f"{present[0]} failed: {_one_line(exc)}") from None
    return staged


def _register_list(module: str, staged: ToolRegistry, value: object) -> None:
    if not isinstance(value, list | tuple):
        raise ToolLoadError(module, f"TOOLS is a {type(value).__name__}, not a list of functions")
    for index, tool in enumerate(cast(list[Any] | tuple[Any, ...], value)):
        if not callable(tool):
            raise ToolLoadError(module, f"TOOLS[{index}] is not a function: {tool!r:.80}")
        try:
            staged.register(tool)
        except (TypeError, ValueError) as exc:
            raise ToolLoadError(module, f"TOOLS[{index}]: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:400] if text else type(exc).__name__
