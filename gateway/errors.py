"""The gateway's refusals: one product error type, with the product's codes, for every protocol.

`GatewayError` is what the request core (`gateway.core`) and every route raise: a code of
`contracts.errors` (docs/errors.md), a message safe to show, and the HTTP status of that code
(`status_of`: one table). Each protocol adapter maps it to its own shape: a JSON body
`{"error": {"code": ..., "message": ...}}` with the status (`error_response`), an AG-UI
RUN_ERROR, an A2A error with the code in `data.code`, an MCP tool error result, a JSON-RPC
error (`gateway.jsonrpc`). Messages never carry a secret, a stack trace or an internal address.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

from contracts.errors import (
    AGENT_EXISTS,
    FORBIDDEN,
    INVALID_INPUT,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    QUOTA_EXCEEDED,
    RATE_LIMITED,
    READ_ONLY_AGENT,
    UNAUTHORIZED,
    UNAVAILABLE,
    UNKNOWN_AGENT,
    UNKNOWN_VERSION,
    UNSUPPORTED_MEDIA_TYPE,
)

__all__ = ["GatewayError", "error_body", "error_headers", "error_response", "not_found", "status_of"]

STATUSES = {
    NOT_FOUND: 404,
    UNKNOWN_AGENT: 404,
    UNKNOWN_VERSION: 404,
    AGENT_EXISTS: 409,
    READ_ONLY_AGENT: 409,
    UNAUTHORIZED: 401,
    FORBIDDEN: 403,
    PAYLOAD_TOO_LARGE: 413,
    UNSUPPORTED_MEDIA_TYPE: 415,
    QUOTA_EXCEEDED: 429,
    RATE_LIMITED: 429,
    UNAVAILABLE: 503,
}
"""The HTTP status of a refusal by its code; every other code (bad input, or a request the
session's state refuses: `busy`, `stale`, `not_running`, ...) is 400."""


def status_of(code: str) -> int:
    """The HTTP status of a refusal with product code `code`."""
    return STATUSES.get(code, 400)


class GatewayError(Exception):
    """A refusal with an HTTP `status`, a product error `code` and a `message` safe to show."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        """A refusal: `status` (400, 401, 404, ...), `code` (`contracts.errors`), `message`, `headers`.

        `headers` go on the response (`WWW-Authenticate`, `Retry-After`).
        """
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})

    @classmethod
    def refused(cls, code: str, message: str, headers: Mapping[str, str] | None = None) -> GatewayError:
        """A refusal with product code `code`, its HTTP status from `status_of`."""
        return cls(status_of(code), code, message, headers)

    @classmethod
    def unavailable(cls) -> GatewayError:
        """503 `unavailable`: Temporal did not answer in time (the caller may try again)."""
        return cls(503, UNAVAILABLE, "the agent could not be reached; try again")

    @classmethod
    def invalid_input(cls, message: str) -> GatewayError:
        """400 `invalid_input`."""
        return cls(400, INVALID_INPUT, message)

    @classmethod
    def unauthorized(cls) -> GatewayError:
        """401 `unauthorized` (the message never says which part of the token was wrong)."""
        return cls(401, UNAUTHORIZED, "a valid `Authorization: Bearer <token>` header is required")

    @classmethod
    def too_large(cls, limit: int) -> GatewayError:
        """413 `payload_too_large` naming the limit."""
        return cls(413, PAYLOAD_TOO_LARGE, f"the request body is over the gateway's limit of {limit:,} bytes")


def not_found(what: str = "thread") -> GatewayError:
    """404 `not_found`: the same answer for a missing thing and another principal's."""
    return GatewayError(404, NOT_FOUND, f"no such {what}")


def error_body(err: GatewayError) -> dict[str, dict[str, str]]:
    """The JSON body of a refusal."""
    return {"error": {"code": err.code, "message": err.message}}


def error_headers(err: GatewayError) -> dict[str, str] | None:
    """The response headers of a refusal: its own, and `WWW-Authenticate: Bearer` on every 401."""
    headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else {}
    headers.update(err.headers)
    return headers or None


def error_response(err: GatewayError) -> JSONResponse:
    """The HTTP response of a refusal (401 carries `WWW-Authenticate: Bearer`)."""
    return JSONResponse(error_body(err), status_code=err.status, headers=error_headers(err))
