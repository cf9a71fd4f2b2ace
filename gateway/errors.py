"""The gateway's refusals: one exception type and one JSON body shape, with the product's codes.

Every refusal is `{"error": {"code": ..., "message": ...}}` with an HTTP status and a code of
`contracts.errors` (docs/errors.md). Messages never carry a secret, a stack trace or an
internal address.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

from contracts.errors import INVALID_INPUT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAUTHORIZED

__all__ = ["GatewayError", "error_body", "error_headers", "error_response", "not_found"]


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
