"""The errors of tool calls: a failure a tool reports, an unknown tool, arguments that do not validate."""

from __future__ import annotations

from pydantic import JsonValue

from contracts.errors import TOOL_ERROR


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
