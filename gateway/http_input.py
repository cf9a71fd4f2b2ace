"""What a route reads of its request: the authenticated principal and a JSON body."""

from __future__ import annotations

import json

from starlette.requests import Request

from gateway.auth import Principal
from gateway.errors import GatewayError

__all__ = ["principal_of", "read_json"]


def principal_of(request: Request) -> Principal:
    """The principal the app's guard authenticated for this request.

    Raises:
        GatewayError: 401 `unauthorized` on a public path called without a valid token.
    """
    principal: Principal | None = request.state.principal
    if principal is None:
        raise GatewayError.unauthorized()
    return principal


async def read_json(request: Request) -> object:
    """The request's JSON body.

    Raises:
        GatewayError: 400 `invalid_input` for a body that is not JSON (413 comes from the guard).
    """
    body = await request.body()
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise GatewayError.invalid_input("the request body is not valid JSON") from None
