"""How a Python function becomes a tool: argument model from its type hints, descriptions from its docstring.

`ToolRegistry` (in `activities.tools.tool_registry`) keeps one `ToolDefinition` per tool name.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic
from pydantic import BaseModel, ConfigDict, ValidationError

from activities.tools.tool_errors import InvalidArgumentsError
from contracts.ids import TOOL_NAME_PATTERN

TOOL_CONTEXT_PARAM = "tool_context"
IDEMPOTENCY_KEY_PARAM = "idempotency_key"
"""A tool parameter the worker fills with a key that is the same on every retry of one tool call."""
TOOL_NAME = TOOL_NAME_PATTERN
"""The tool names providers accept (`contracts.ids`)."""
_SECTION = re.compile(r"^\s*(Args|Arguments|Returns|Yields|Raises|Examples?|Notes?|Attributes):\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class ToolDefinition:
    """One registered tool: the function and what the model and the validator need to know of it."""

    name: str
    fn: Callable[..., Any]
    description: str
    arguments: type[BaseModel] | None  # None: `parameters` was given; the tool validates its arguments
    wants_context: bool
    wants_idempotency_key: bool = False
    parameters: dict[str, Any] | None = None
    local: bool = False
    requires_approval: bool = False


def build_tool(fn: Callable[..., Any], name: str | None, description: str | None) -> ToolDefinition:
    """The definition of a tool whose schema comes from `fn`'s type hints and docstring.

    Raises:
        ValueError: The name is invalid for providers.
        TypeError: The function takes `*args`/`**kwargs`, or `idempotency_key` is not a `str`.
    """
    tool_name = name or fn.__name__
    if not TOOL_NAME.fullmatch(tool_name):
        raise ValueError(f"tool name {tool_name!r} must match {TOOL_NAME.pattern}")
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
    wants_key = wants_idempotency_key(tool_name, params, hints.get(IDEMPOTENCY_KEY_PARAM, str))
    return ToolDefinition(tool_name, fn, description or summary, model, wants_context, wants_key)


def wants_idempotency_key(
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


def invalid_arguments(exc: ValidationError) -> InvalidArgumentsError:
    """The error for arguments that failed validation: every problem in one message, the fields named."""
    problems: list[str] = []
    fields: list[str] = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        fields.append(loc)
        problems.append(f"{loc}: {error['msg']}")
    return InvalidArgumentsError("invalid arguments: " + "; ".join(problems), sorted(set(fields)))


def strip_titles(node: Any) -> Any:
    """The schema without pydantic's generated `title`s, which only cost the model tokens."""
    if isinstance(node, list):
        return [strip_titles(item) for item in node]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: strip_titles(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        else:
            out[key] = strip_titles(value)
    return out
