"""A registry of plain Python functions exposed to the model as tools.

A tool is an ordinary (sync or async) function. Its JSON schema comes from its
type hints (through pydantic) and its descriptions from its Google-style
docstring, so a tool is documented once, for humans and the model alike.
Arguments are validated against the same pydantic model before the call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints, overload

import pydantic
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from contracts.errors import TOOL_ERROR
from contracts.llm import ToolSpec

F = TypeVar("F", bound=Callable[..., Any])

TOOL_CONTEXT_PARAM = "tool_context"
IDEMPOTENCY_KEY_PARAM = "idempotency_key"
"""A tool parameter the worker fills with a key that is the same on every retry of one tool call."""
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Returns|Yields|Raises|Examples?|Notes?|Attributes):\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ToolFailure(Exception):
    """An expected failure a tool reports to the model (bad input, not found, ...).

    Non-retryable failures become an error result at once; retryable ones are
    retried by Temporal first.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        details: JsonValue = None,
        type: str = TOOL_ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.details = details
        self.type = type


class UnknownToolError(LookupError):
    """No tool of that name is registered (error code `unknown_tool`)."""

    def __init__(self, name: str, available: list[str]) -> None:
        super().__init__(f"unknown tool {name!r}; available tools: {', '.join(available) or '(none)'}")
        self.name = name
        self.available = available


class InvalidArgumentsError(ValueError):
    """The arguments do not match the tool's schema; `fields` names the offending ones."""

    def __init__(self, message: str, fields: list[str]) -> None:
        super().__init__(message)
        self.fields = fields


@dataclass(frozen=True)
class _Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    arguments: type[BaseModel] | None  # None: `parameters` was given; the tool validates its arguments
    wants_context: bool
    wants_idempotency_key: bool = False
    parameters: dict[str, Any] | None = None
    local: bool = False


class ToolRegistry:
    """Named tools: their specs for the model and a validated way to call them."""

    def __init__(self) -> None:
        self._tools: dict[str, _Tool] = {}

    @overload
    def register(
        self, fn: F, *, name: str | None = None, description: str | None = None, local: bool = False
    ) -> F: ...
    @overload
    def register(
        self, fn: None = None, *, name: str | None = None, description: str | None = None, local: bool = False
    ) -> Callable[[F], F]: ...
    def register(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        local: bool = False,
    ) -> F | Callable[[F], F]:
        """Register `fn` as a tool; also usable as `@registry.register` or `@registry.register(name=...)`.

        Args:
            fn: The tool function (sync or async).
            name: The tool's name for the model; defaults to the function's name.
            description: Overrides the docstring's summary.
            local: The tool is fast (well under a second) and pure (no side effects that
                must not repeat): runs may execute it as a local activity, inside the
                workflow task, without a task-queue round trip. It cannot heartbeat, and a
                retry re-runs it in the same workflow task (see README, "Local tools").

        Returns:
            `fn` unchanged (or a decorator that registers and returns it).

        Raises:
            ValueError: The name is invalid for providers or already registered.
            TypeError: The function takes `*args`/`**kwargs`, which have no schema.
        """
        if fn is None:
            return lambda f: self.register(f, name=name, description=description, local=local)
        tool = dataclasses.replace(_build_tool(fn, name, description), local=local)
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return fn

    def register_schema(
        self, fn: Callable[..., Any], *, name: str, description: str, parameters: dict[str, Any]
    ) -> None:
        """Register a tool whose JSON schema is given rather than derived from type hints (an MCP tool).

        `fn` is called as `fn(arguments=<the arguments object>)`, plus `tool_context` and
        `idempotency_key` when it declares them. The arguments are not validated here:
        `parameters` is what the model sees, and the tool validates what it receives.

        Raises:
            ValueError: The name is invalid or already registered, or `parameters` is not
                an object schema.
            TypeError: `fn` takes no `arguments` parameter.
        """
        if not _NAME.match(name):
            raise ValueError(f"tool name {name!r} must match {_NAME.pattern}")
        if parameters.get("type") != "object":
            raise ValueError(f"tool {name!r}: parameters must be a JSON schema of type 'object'")
        params = inspect.signature(fn).parameters
        if "arguments" not in params:
            raise TypeError(f"tool {name!r}: the function must take an `arguments` parameter")
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered")
        self._tools[name] = _Tool(
            name,
            fn,
            description,
            None,
            TOOL_CONTEXT_PARAM in params,
            _wants_idempotency_key(name, params),
            dict(parameters),
        )

    def include(self, other: ToolRegistry) -> None:
        """Add every tool of `other`, or none of them if a name is already registered here.

        Raises:
            ValueError: Names that both registries have, all listed.
        """
        clashes = sorted(set(self._tools) & set(other._tools))
        if clashes:
            raise ValueError(f"already registered: {', '.join(repr(name) for name in clashes)}")
        self._tools.update(other._tools)

    def names(self) -> list[str]:
        """The registered tool names, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def is_local(self, name: str) -> bool:
        """Whether the tool was registered as `local` (fast and pure: may run as a local activity)."""
        tool = self._tools.get(name)
        return tool is not None and tool.local

    def spec(self, name: str) -> ToolSpec:
        """What the model sees of a tool: name, description, JSON schema of its arguments."""
        tool = self._get(name)
        raw = tool.parameters if tool.arguments is None else tool.arguments.model_json_schema()
        schema = _strip_titles(raw)
        return ToolSpec(name=tool.name, description=tool.description, parameters=schema)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        tool_context: dict[str, JsonValue] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Validate `arguments` and run the tool (a sync tool runs in a thread).

        A tool that declares `idempotency_key` receives `idempotency_key` (the `run_tool`
        activity passes one that is stable across the retries of a call), or a fresh
        random key when none is given.

        Raises:
            UnknownToolError: No such tool.
            InvalidArgumentsError: The arguments do not match the schema.
            ToolFailure: The tool reported an expected failure.
        """
        tool = self._get(name)
        if tool.arguments is None:
            kwargs: dict[str, Any] = {"arguments": dict(arguments)}
        else:
            try:
                validated = tool.arguments.model_validate(arguments)
            except ValidationError as exc:
                raise _invalid_arguments(exc) from exc
            kwargs = dict(validated)
        if tool.wants_context:
            kwargs[TOOL_CONTEXT_PARAM] = tool_context or {}
        if tool.wants_idempotency_key:
            kwargs[IDEMPOTENCY_KEY_PARAM] = idempotency_key or uuid.uuid4().hex
        if inspect.iscoroutinefunction(tool.fn):
            return await tool.fn(**kwargs)
        result = await asyncio.to_thread(tool.fn, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result

    def _get(self, name: str) -> _Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(name, self.names()) from None


def default_registry() -> ToolRegistry:
    """A new registry with the built-in tools (the calculator)."""
    # Imported here: the calculator imports ToolFailure from this module.
    from activities.calculator import calculator

    registry = ToolRegistry()
    registry.register(calculator)
    return registry


def _build_tool(fn: Callable[..., Any], name: str | None, description: str | None) -> _Tool:
    tool_name = name or fn.__name__
    if not _NAME.match(tool_name):
        raise ValueError(f"tool name {tool_name!r} must match {_NAME.pattern}")
    summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    wants_context = False
    params = inspect.signature(fn).parameters
    for param in params.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args and **kwargs cannot be described to the model")
        if param.name == TOOL_CONTEXT_PARAM:
            wants_context = True
            continue
        if param.name == IDEMPOTENCY_KEY_PARAM:
            continue
        default = ... if param.default is param.empty else param.default
        field = pydantic.Field(default, description=arg_docs.get(param.name))
        fields[param.name] = (hints.get(param.name, Any), field)
    model = pydantic.create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    wants_key = _wants_idempotency_key(tool_name, params, hints.get(IDEMPOTENCY_KEY_PARAM, str))
    return _Tool(tool_name, fn, description or summary, model, wants_context, wants_key)


def _wants_idempotency_key(
    tool_name: str, params: Mapping[str, inspect.Parameter], annotation: object = str
) -> bool:
    """Whether the tool declares `idempotency_key` (which must be a `str`)."""
    if IDEMPOTENCY_KEY_PARAM not in params:
        return False
    if annotation is not str:
        raise TypeError(f"tool {tool_name!r}: `{IDEMPOTENCY_KEY_PARAM}` must be annotated `str`")
    return True


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (first paragraph) and per-argument descriptions of a Google-style docstring."""
    lines = doc.expandtabs().splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line):
            break
        summary_lines.append(line.strip())
    args: dict[str, str] = {}
    start = next((i for i, line in enumerate(lines) if line.strip() in ("Args:", "Arguments:")), None)
    if start is None:
        return " ".join(summary_lines), args
    base = _indent(lines[start])
    item_indent: int | None = None
    current: str | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= base:
            break
        item_indent = indent if item_indent is None else item_indent
        match = _ARG_LINE.match(line.strip())
        if indent == item_indent and match:
            current = str(match.group(1))
            args[current] = str(match.group(2)).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary_lines), args


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _invalid_arguments(exc: ValidationError) -> InvalidArgumentsError:
    problems: list[str] = []
    fields: list[str] = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        fields.append(loc)
        problems.append(f"{loc}: {error['msg']}")
    return InvalidArgumentsError("invalid arguments: " + "; ".join(problems), sorted(set(fields)))


def _strip_titles(node: Any) -> Any:
    """The schema without pydantic's generated `title`s, which only cost the model tokens."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: _strip_titles(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        else:
            out[key] = _strip_titles(value)
    return out
