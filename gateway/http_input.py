"""What a route reads of its request: the authenticated principal and a JSON body, never nested too deep.

JSON nests at most `MAX_JSON_DEPTH` levels of arrays and objects in any request body. The app's
guard checks every body (`check_json_depth`, a scan over the raw bytes) but a file upload's raw
bytes (`POST /api/files`, never parsed) before any route or any protocol library parses it, so
no parser recurses into a hostile body: deeper JSON is refused by name (400 `invalid_input`; a
JSON-RPC parse error, -32700, on `/a2a/` and `/mcp`). 64 levels is far more than any request
the product takes needs (a tool's edited arguments, a client's JSON Schemas, an A2A data part)
and below protobuf's 100-level recursion limit that `a2a-sdk` parses under.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from itertools import accumulate
from typing import Any, cast

from starlette.requests import Request
from starlette.types import Message, Receive

from gateway.errors import GatewayError
from gateway.identity.principal import Principal

__all__ = [
    "MAX_JSON_DEPTH",
    "check_json_depth",
    "json_depth_exceeds",
    "principal_of",
    "read_json",
    "read_object",
]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a request body may have."""
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]


def principal_of(request: Request) -> Principal:
    """The principal the app's guard authenticated for this request.

    Raises:
        GatewayError: 401 `unauthorized` on a public path called without a valid token.
    """
    principal: Principal | None = request.state.principal
    if principal is None:
        raise GatewayError.unauthorized()
    return principal


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body` nests arrays and objects deeper than `limit` (brackets inside strings do not count).

    Linear in the body and without recursion: escapes are cut out, then strings, then the brackets
    left are counted. A body that is not JSON may be counted too deep; it is refused either way.
    """
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", body)).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return any(map(limit.__lt__, accumulate(map(_STEP.__getitem__, brackets))))


def check_json_depth(body: bytes) -> None:
    """Refuse a body nested deeper than `MAX_JSON_DEPTH`.

    Raises:
        GatewayError: 400 `invalid_input` naming the limit.
    """
    if json_depth_exceeds(body):
        raise GatewayError.invalid_input(
            f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels of arrays and objects"
        )


async def read_json(request: Request) -> object:
    """The request's JSON body.

    Raises:
        GatewayError: 400 `invalid_input` for a body that is not JSON (the app's guard refused a
            body nested deeper than `MAX_JSON_DEPTH`, and one over the size limit, already).
    """
    body = await request.body()
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise GatewayError.invalid_input("the request body is not valid JSON") from None


async def read_object(request: Request, fields: Collection[str] | None = None) -> dict[str, Any]:
    """The request's JSON body, an object; with `fields`, holding none but those.

    Raises:
        GatewayError: 400 `invalid_input`: a body that is not JSON, not an object, or that holds a
            field `fields` does not name (the first, by name, with the fields there are).
    """
    body = await read_json(request)
    if not isinstance(body, dict):
        raise GatewayError.invalid_input("the body must be a JSON object")
    given = cast(dict[str, Any], body)
    if fields is not None and (unknown := sorted(set(given) - set(fields))):
        raise GatewayError.invalid_input(
            f"{unknown[0]}: not a field here (fields: {', '.join(sorted(fields))})"
        )
    return given


def handing_on(first: Message, receive: Receive) -> Receive:
    """A receive that hands the route `first` (a message already read), then reaches `receive`.

    The body limit and the guard read a request's first message before the route does; later
    calls reach the server's own `receive` (an SSE response listens there for the client leaving).
    """
    handed = False

    async def replay() -> Message:
        nonlocal handed
        if handed:
            return await receive()
        handed = True
        return first

    return replay
