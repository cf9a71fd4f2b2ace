"""A registry of plain Python functions exposed to the model as tools.

A tool is an ordinary (sync or async) function. Its JSON schema comes from its
type hints (through pydantic) and its descriptions from its Google-style
docstring, so a tool is documented once, for humans and the model alike.
Arguments are validated against the same pydantic model before the call.

How a function becomes a tool is in `activities.tools._tool_definition`, the errors in
`activities.tools.tool_errors`; both are importable from here as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import uuid
from collections.abc import Callable
from typing import Any, TypeVar, overload

from pydantic import JsonValue, ValidationError

from activities.tools._arguments_check import check_with_model, check_with_schema
from activities.tools._tool_definition import (
    IDEMPOTENCY_KEY_PARAM,
    TOOL_CONTEXT_PARAM,
    TOOL_NAME,
    ToolDefinition,
    build_tool,
    invalid_arguments,
    parse_docstring,
    strip_titles,
    wants_idempotency_key,
)
from activities.tools.calculator import calculator
from activities.tools.tool_effects import StateEffect, ToolResult, with_effects
from activities.tools.tool_errors import InvalidArgumentsError, ToolFailure, UnknownToolError
from contracts.approval import ArgumentsVerdict
from contracts.llm import ToolSpec

__all__ = [
    "IDEMPOTENCY_KEY_PARAM",
    "TOOL_CONTEXT_PARAM",
    "InvalidArgumentsError",
    "StateEffect",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "UnknownToolError",
    "default_registry",
    "parse_docstring",
    "with_effects",
]

F = TypeVar("F", bound=Callable[..., Any])


class ToolRegistry:
    """Named tools: their specs for the model and a validated way to call them."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._specs: dict[str, ToolSpec] = {}  # built once per tool: names are never re-registered

    @overload
    def register(
        self,
        fn: F,
        *,
        name: str | None = None,
        description: str | None = None,
        local: bool = False,
        requires_approval: bool = False,
    ) -> F: ...
    @overload
    def register(
        self,
        fn: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        local: bool = False,
        requires_approval: bool = False,
    ) -> Callable[[F], F]: ...
    def register(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        local: bool = False,
        requires_approval: bool = False,
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
            requires_approval: Every call of the tool waits for a human's `approve` decision
                (see docs/tools.md, "Tools that need approval").

        Returns:
            `fn` unchanged (or a decorator that registers and returns it).

        Raises:
            ValueError: The name is invalid for providers or already registered.
            TypeError: The function takes `*args`/`**kwargs`, which have no schema.
        """
        if fn is None:
            return lambda f: self.register(
                f, name=name, description=description, local=local, requires_approval=requires_approval
            )
        tool = dataclasses.replace(
            build_tool(fn, name, description), local=local, requires_approval=requires_approval
        )
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return fn

    def register_schema(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        requires_approval: bool = False,
    ) -> None:
        """Register a tool whose JSON schema is given rather than derived from type hints (an MCP tool).

        `fn` is called as `fn(arguments=<the arguments object>)`, plus `tool_context` and
        `idempotency_key` when it declares them. The arguments are not validated here:
        `parameters` is what the model sees, and the tool validates what it receives
        (`check_arguments` validates against `parameters`). `requires_approval`: as for
        `register`.

        Raises:
            ValueError: The name is invalid or already registered, or `parameters` is not
                an object schema.
            TypeError: `fn` takes no `arguments` parameter.
        """
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(f"tool name {name!r} must match {TOOL_NAME.pattern}")
        if parameters.get("type") != "object":
            raise ValueError(f"tool {name!r}: parameters must be a JSON schema of type 'object'")
        params = inspect.signature(fn).parameters
        if "arguments" not in params:
            raise TypeError(f"tool {name!r}: the function must take an `arguments` parameter")
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered")
        self._tools[name] = ToolDefinition(
            name,
            fn,
            description,
            None,
            TOOL_CONTEXT_PARAM in params,
            wants_idempotency_key(name, params),
            dict(parameters),
            requires_approval=requires_approval,
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

    def requires_approval(self, name: str) -> bool:
        """Whether every call of the tool waits for an `approve` decision (registered `requires_approval`)."""
        tool = self._tools.get(name)
        return tool is not None and tool.requires_approval

    def check_arguments(self, name: str, arguments: dict[str, Any]) -> ArgumentsVerdict:
        """Whether `arguments` fit the tool's schema, without calling it (e.g. arguments edited on approval).

        A Python tool's arguments are checked by its pydantic model, a schema tool's (MCP)
        by its JSON schema. The verdict's `problem` is None when they fit; otherwise it
        says what is wrong and `fields` names the failing fields. An unknown tool is a
        problem naming it.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ArgumentsVerdict(problem=str(UnknownToolError(name, self.names())))
        if tool.arguments is not None:
            return check_with_model(tool.arguments, arguments)
        return check_with_schema(tool.parameters or {}, arguments)

    def spec(self, name: str) -> ToolSpec:
        """What the model sees of a tool: name, description, JSON schema of its arguments."""
        cached = self._specs.get(name)
        if cached is not None:
            return cached
        tool = self._get(name)
        raw = tool.parameters if tool.arguments is None else tool.arguments.model_json_schema()
        schema = strip_titles(raw)
        spec = self._specs[name] = ToolSpec(name=tool.name, description=tool.description, parameters=schema)
        return spec

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
                raise invalid_arguments(exc) from exc
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

    def _get(self, name: str) -> ToolDefinition:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(name, self.names()) from None


def default_registry() -> ToolRegistry:
    """A new registry with the built-in tools (the calculator)."""
    registry = ToolRegistry()
    registry.register(calculator)
    return registry
