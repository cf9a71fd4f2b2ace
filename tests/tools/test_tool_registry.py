"""The tool registry: specs from type hints and docstrings, registration, calls and their errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activities import ToolRegistry, default_registry
from activities.tools.tool_registry import InvalidArgumentsError, UnknownToolError, parse_docstring
from tests.example_tools import registry


def test_spec_from_hints_and_docstring() -> None:
    spec = registry().spec("search")
    assert spec.description == "Search the knowledge base for documents."
    params: Any = spec.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert set(props) == {"query", "limit", "mode", "tags", "origin"}  # no tool_context
    assert props["query"] == {
        "type": "string",
        "description": "What to look for. Plain words work best, no boolean syntax.",
    }
    assert props["limit"] == {"type": "integer", "default": 5, "description": "How many results to return."}
    assert props["mode"]["enum"] == ["fast", "deep"]
    assert "title" not in json.dumps(params)
    assert "$defs" in params and "Point" in params["$defs"]


def test_register_variants() -> None:
    reg = ToolRegistry()

    @reg.register
    def first() -> str:
        """First."""
        return "1"

    @reg.register(name="second-tool", description="Overridden.")
    def second() -> str:
        return "2"

    assert first() == "1" and second() == "2"
    assert reg.names() == ["first", "second-tool"]
    assert reg.spec("second-tool").description == "Overridden."
    assert reg.spec("first").parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    with pytest.raises(ValueError, match="already registered"):
        reg.register(first)
    with pytest.raises(ValueError, match="must match"):
        reg.register(first, name="has space")

    def varargs(*values: int) -> int:
        return sum(values)

    with pytest.raises(TypeError, match="args"):
        reg.register(varargs)


def test_parse_docstring() -> None:
    summary, args = parse_docstring(
        "Do a thing\nacross two lines.\n\nArgs:\n    a: First.\n    b (int): Second,\n        continued.\n"
        "\nReturns:\n    c: not an argument.\n"
    )
    assert summary == "Do a thing across two lines."
    assert args == {"a": "First.", "b": "Second, continued."}
    assert parse_docstring("") == ("", {})


async def test_registry_call_errors() -> None:
    reg = registry()
    with pytest.raises(UnknownToolError, match="available tools: add, big"):
        await reg.call("nope", {})
    with pytest.raises(InvalidArgumentsError) as caught:
        await reg.call("add", {"a": "one"})
    assert caught.value.fields == ["a", "b"]
    assert await reg.call("add", {"a": 1, "b": "2"}) == 3


def test_default_registry_has_the_calculator() -> None:
    reg = default_registry()
    assert reg.names() == ["calculator"]
    assert reg.spec("calculator").parameters["required"] == ["expression"]
    assert default_registry() is not reg
