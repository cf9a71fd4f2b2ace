"""The tool activities: run one tool call, resolve tool names into specs, check edited arguments.

A tool's expected failures (unknown tool, malformed or invalid arguments, a
non-retryable `ToolFailure`) are *returned* as error outcomes: the model reads
them and can correct itself, and Temporal does not retry what cannot succeed.
Retryable failures and unexpected exceptions are *raised* so that Temporal
retries them; the workflow turns exhausted retries into an error outcome.

Error types are codes of `contracts.errors` (`unknown_tool`, `invalid_arguments`,
`invalid_result`, `tool_error`, or a `ToolFailure`'s own type). Messages and details
are redacted (`payloads.redaction`) before they leave the worker, and a tool's exception
is never chained to the raised error (Temporal would write its text into history).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from pydantic import JsonValue
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities._heartbeat import with_heartbeat
from activities.tools.tool_effects import split_result
from activities.tools.tool_registry import InvalidArgumentsError, ToolFailure, ToolRegistry
from contracts.activities import CHECK_TOOL_ARGUMENTS_ACTIVITY, RESOLVE_TOOLS_ACTIVITY, TOOL_ACTIVITY
from contracts.approval import ArgumentsCheck, ArgumentsVerdict
from contracts.errors import INVALID_ARGUMENTS, INVALID_RESULT, TOOL_ERROR, UNKNOWN_TOOL
from contracts.llm import ToolSpec
from contracts.tools import (
    MAX_RESULT_CHARS,
    ResolveToolsRequest,
    ToolCallRequest,
    ToolError,
    ToolOutcome,
    cut_result,
)
from payloads.redaction import redact, redact_json


class ToolActivities:
    """The tool activities, bound to the worker's `ToolRegistry`."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry

    @activity.defn(name=TOOL_ACTIVITY)
    async def run_tool(self, request: ToolCallRequest) -> ToolOutcome:
        """Run one tool call and report its result or expected failure.

        Raises:
            ApplicationError: Retryable: a retryable `ToolFailure` (its own type), or an
                unexpected exception (`tool_error`); details are
                `{"attempt": n, "exception": <class name>}` (plus the failure's `details`).
        """
        attempt = activity.info().attempt
        call = request.call
        if call.name not in self._registry:
            return _failed(UNKNOWN_TOOL, self._unknown_message([call.name]), attempt)
        arguments = _parse_arguments(call.arguments)
        if isinstance(arguments, str):
            return _failed(INVALID_ARGUMENTS, arguments, attempt)
        try:
            result = await with_heartbeat(
                self._registry.call(
                    call.name,
                    arguments,
                    tool_context=request.tool_context,
                    idempotency_key=idempotency_key(activity.info()),
                )
            )
        except InvalidArgumentsError as exc:
            return _failed(INVALID_ARGUMENTS, str(exc), attempt, details={"fields": list(exc.fields)})
        except ToolFailure as exc:
            if not exc.retryable:
                return _failed(exc.type, exc.message, attempt, details=exc.details)
            raise _retryable(exc, exc.type, exc.message, attempt, exc.details) from None
        except Exception as exc:
            raise _retryable(exc, TOOL_ERROR, str(exc) or type(exc).__name__, attempt) from None
        value, effects, rejected = split_result(result)
        try:
            return ToolOutcome(
                ok=True,
                result=bounded_result(value),
                attempts=attempt,
                effects=effects,
                effects_rejected=rejected,
            )
        except PydanticSerializationError as exc:
            # Retrying will not make the value serializable; tell the model instead.
            return _failed(INVALID_RESULT, f"the tool returned a value that is not JSON: {exc}", attempt)

    @activity.defn(name=RESOLVE_TOOLS_ACTIVITY)
    async def resolve_tools(self, request: ResolveToolsRequest) -> list[ToolSpec]:
        """The specs of the named tools, so a run can check its tools and show them to the model.

        Raises:
            ApplicationError: Non-retryable, type `unknown_tool`, if a name is not registered.
        """
        unknown = [name for name in request.names if name not in self._registry]
        if unknown:
            message = redact(self._unknown_message(unknown))
            details = {"unknown": redact_json(list[JsonValue](unknown))}
            raise ApplicationError(message, details, type=UNKNOWN_TOOL, non_retryable=True)
        return [self._registry.spec(name) for name in request.names]

    @activity.defn(name=CHECK_TOOL_ARGUMENTS_ACTIVITY)
    async def check_tool_arguments(self, request: ArgumentsCheck) -> ArgumentsVerdict:
        """Whether arguments fit the tool's schema (arguments edited on approval), without calling it.

        Never raises for bad arguments or an unknown tool: the verdict's `problem` says
        what is wrong (redacted), `fields` names the failing fields.
        """
        verdict = self._registry.check_arguments(request.name, dict(request.arguments))
        if verdict.problem is None:
            return verdict
        return ArgumentsVerdict(problem=redact(verdict.problem), fields=verdict.fields)

    def _unknown_message(self, names: list[str]) -> str:
        available = ", ".join(self._registry.names()) or "(none)"
        what = "unknown tool" if len(names) == 1 else "unknown tools"
        return f"{what}: {', '.join(repr(n) for n in names)}; available tools: {available}"


def idempotency_key(info: activity.Info) -> str:
    """The key of one tool call: the same on every retry of the call, different for any other call.

    The SHA-256 (hex) of the workflow id, the workflow run id and the activity id: Temporal
    keeps all three across the attempts of one activity, and no two activities share them.
    """
    return call_key(info.workflow_id or "", info.workflow_run_id or "", info.activity_id)


def call_key(workflow_id: str, run_id: str, activity_id: str) -> str:
    """`idempotency_key` of the activity `activity_id` of one workflow execution (read from its history)."""
    return hashlib.sha256("\x1f".join((workflow_id, run_id, activity_id)).encode()).hexdigest()


def bounded_result(result: Any) -> JsonValue:
    """The result as JSON data, or its JSON text cut at `MAX_RESULT_CHARS` with a marker.

    Raises:
        PydanticSerializationError: The value cannot be represented as JSON.
    """
    data: JsonValue = to_jsonable_python(result)
    text = to_json(data).decode()
    return data if len(text) <= MAX_RESULT_CHARS else cut_result(text)


def _parse_arguments(raw: str) -> dict[str, Any] | str:
    """The arguments object, or a message saying why the raw text is not one."""
    try:
        value: object = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON: {exc.msg} at char {exc.pos}"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, not {type(value).__name__}: {raw[:200]}"
    return {str(k): v for k, v in cast(dict[object, Any], value).items()}


def _retryable(
    exc: Exception, error_type: str, message: str, attempt: int, details: JsonValue = None
) -> ApplicationError:
    """The retryable error raised for a tool's exception (redacted; raise it `from None`)."""
    info: dict[str, JsonValue] = {"attempt": attempt, "exception": type(exc).__name__}
    if details is not None:
        info["details"] = redact_json(details)
    return ApplicationError(redact(message), info, type=error_type, non_retryable=False)


def _failed(error_type: str, message: str, attempt: int, details: JsonValue = None) -> ToolOutcome:
    return ToolOutcome(
        ok=False,
        error=ToolError(
            type=error_type, message=redact(message), details=redact_json(details), retryable=False
        ),
        attempts=attempt,
    )
