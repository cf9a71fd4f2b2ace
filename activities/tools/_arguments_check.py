"""Checking a tool call's arguments without calling the tool (edited arguments of an approval).

A Python tool's arguments are checked by its pydantic model (the same check a call
makes); a tool registered with a JSON schema (an MCP tool) by that schema, with
`jsonschema`. Either way the verdict names every failing field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from activities.tools._tool_definition import invalid_arguments
from contracts.approval import ArgumentsVerdict

_ROOT = "(arguments)"


def check_with_model(model: type[BaseModel], arguments: Mapping[str, Any]) -> ArgumentsVerdict:
    """The verdict of a Python tool's argument model on `arguments`."""
    try:
        model.model_validate(dict(arguments))
    except ValidationError as exc:
        error = invalid_arguments(exc)
        return ArgumentsVerdict(problem=str(error), fields=list(error.fields))
    return ArgumentsVerdict()


def check_with_schema(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> ArgumentsVerdict:
    """The verdict of a JSON schema on `arguments` (every error, its field named).

    A schema that is itself invalid refuses every edit: nothing could be checked against it.
    `jsonschema` is imported here, on the first check: it costs a worker's start-up otherwise.
    """
    from jsonschema import SchemaError, validators

    validator_class: Any = cast(Any, validators).validator_for(dict(schema))
    try:
        validator_class.check_schema(dict(schema))
    except SchemaError as exc:
        return ArgumentsVerdict(
            problem=f"the tool's JSON schema is invalid ({exc.message}); edits cannot be checked"
        )
    validator: Any = validator_class(dict(schema))
    errors = sorted(cast(Iterable[Any], validator.iter_errors(dict(arguments))), key=_error_path)
    if not errors:
        return ArgumentsVerdict()
    problems: list[str] = []
    fields: list[str] = []
    for error in errors:
        for field in _fields(error):
            fields.append(field)
        problems.append(f"{_error_path(error) or _ROOT}: {error.message}")
    return ArgumentsVerdict(problem="invalid arguments: " + "; ".join(problems), fields=sorted(set(fields)))


def _error_path(error: Any) -> str:
    return ".".join(str(part) for part in cast(Iterable[object], error.absolute_path))


def _fields(error: Any) -> list[str]:
    """The fields an error is about: a missing or unexpected property is named itself."""
    base = _error_path(error)
    instance: object = error.instance
    names: list[str] = []
    if error.validator == "required" and isinstance(instance, dict):
        present = cast(dict[str, object], instance)
        names = [str(name) for name in cast(Iterable[object], error.validator_value) if name not in present]
    elif error.validator == "additionalProperties" and isinstance(instance, dict):
        declared: object = cast(Mapping[str, object], error.schema).get("properties")
        known = set(cast(Mapping[str, object], declared)) if isinstance(declared, dict) else set[str]()
        names = [str(name) for name in cast(dict[str, object], instance) if name not in known]
    if not names:
        return [base or _ROOT]
    return [f"{base}.{name}" if base else name for name in names]
