"""What the chat page needs to sign in with the gateway's OpenID provider (no secret in the page).

    GET  /api/identity          {"client_id", "authorization_endpoint", "end_session_endpoint", "scope"}
                                (no client configured: {"client_id": null}: the page keeps its token field)
    POST /api/identity/token    {"grant_type": "authorization_code", "code", "code_verifier", "redirect_uri"}
                                or {"grant_type": "refresh_token", "refresh_token"}: the provider's tokens

The page runs the authorization code grant with PKCE itself (the verifier never leaves the
browser but to the token endpoint) with `REACT_GATEWAY_OIDC_CLIENT_ID`, a public client. It trades
the code, and later its refresh token, through `POST /api/identity/token`, which forwards the form
to the provider's token endpoint with the client id and hands back the token response: the page
only ever calls its own origin, so its Content-Security-Policy stays `'self'` and the provider
needs no CORS for it. Both routes are public (the caller has no token yet); the forwarded bodies
are bounded and only these two grants pass, and the exchange is rate-limited per client address
(`REACT_GATEWAY_SIGNIN_PER_MINUTE`, default 60 a minute, per gateway instance: a token bucket of
`gateway.guard.rate`; over it, 429 `rate_limited` with `Retry-After`, and nothing is forwarded).
Behind a reverse proxy, run uvicorn with `--proxy-headers` (and `--forwarded-allow-ips`) so the
address is the caller's, not the proxy's.
"""

from __future__ import annotations

import time
from typing import cast

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.errors import INVALID_INPUT
from gateway.errors import GatewayError
from gateway.guard.rate import RequestRate
from gateway.http_input import read_json
from gateway.identity.scopes import APPROVE, ASK, SCHEDULES
from gateway.identity.settings import OidcSettings

__all__ = ["CONFIG_PATH", "TOKEN_PATH", "routes"]

CONFIG_PATH = "/api/identity"
TOKEN_PATH = "/api/identity/token"
PAGE_SCOPE = f"openid {ASK} {APPROVE} {SCHEDULES}"
MAX_FIELD_CHARS = 4096
METADATA_MAX_AGE_S = 3600.0
PASSED_ON = ("access_token", "token_type", "expires_in", "refresh_token", "scope")
_GRANTS = {
    "authorization_code": ("code", "code_verifier", "redirect_uri"),
    "refresh_token": ("refresh_token",),
}


class _Metadata:
    """The provider's discovery document, read when first needed and kept an hour."""

    def __init__(self, oidc: OidcSettings) -> None:
        self._oidc = oidc
        self._document: dict[str, object] | None = None
        self._read_at = 0.0

    async def get(self, http: httpx.AsyncClient) -> dict[str, object]:
        if self._document is not None and time.monotonic() - self._read_at < METADATA_MAX_AGE_S:
            return self._document
        try:
            response = await http.get(self._oidc.metadata_url)
            document: object = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            document = None
        fields = _object(document)
        if fields.get("issuer") != self._oidc.issuer:
            raise GatewayError(503, "unavailable", "the identity provider could not be reached; try again")
        self._document = fields
        self._read_at = time.monotonic()
        return self._document


def routes(oidc: OidcSettings | None, per_minute: int) -> list[BaseRoute]:
    """The chat page's sign-in routes (answering `client_id: null` without a provider's client).

    `per_minute`: the token exchanges a client address may make a minute.
    """
    metadata = _Metadata(oidc) if oidc is not None and oidc.client_id else None
    exchanges = RequestRate(per_minute)

    def http() -> httpx.AsyncClient:  # sign-ins are rare: a client per call, nothing left open
        return httpx.AsyncClient(timeout=10.0, follow_redirects=False)

    async def config(request: Request) -> Response:
        if oidc is None or metadata is None:
            return JSONResponse({"client_id": None})
        async with http() as client:
            document = await metadata.get(client)
        return JSONResponse(
            {
                "client_id": oidc.client_id,
                "authorization_endpoint": document.get("authorization_endpoint"),
                "end_session_endpoint": document.get("end_session_endpoint"),
                "scope": PAGE_SCOPE,
            },
            headers={"Cache-Control": "no-store"},
        )

    async def token(request: Request) -> Response:
        if oidc is None or metadata is None or oidc.client_id is None:
            raise GatewayError(404, "not_found", "this gateway has no sign-in")
        exchanges.admit(request.client.host if request.client is not None else "unknown")
        form = _grant_form(await read_json(request))
        async with http() as client:
            endpoint = (await metadata.get(client)).get("token_endpoint")
            if not isinstance(endpoint, str):
                raise GatewayError(503, "unavailable", "the identity provider names no token endpoint")
            try:
                response = await client.post(endpoint, data={**form, "client_id": oidc.client_id})
                answer: object = response.json()
            except (httpx.HTTPError, ValueError):
                raise GatewayError(
                    503, "unavailable", "the identity provider could not be reached; try again"
                ) from None
        fields = _object(answer)
        if response.status_code != 200 or not isinstance(fields.get("access_token"), str):
            error = str(fields.get("error", "invalid_grant"))[:100]
            raise GatewayError(400, INVALID_INPUT, f"the identity provider refused the grant: {error}")
        return JSONResponse(
            {k: fields[k] for k in PASSED_ON if k in fields}, headers={"Cache-Control": "no-store"}
        )

    return [
        Route(CONFIG_PATH, config, methods=["GET"]),
        Route(TOKEN_PATH, token, methods=["POST"]),
    ]


def _grant_form(body: object) -> dict[str, str]:
    """The token request's form of a JSON body: one of the two grants, its fields strings.

    Raises:
        GatewayError: 400 `invalid_input`.
    """
    fields = _object(body)
    grant = fields.get("grant_type")
    if not isinstance(grant, str) or grant not in _GRANTS:
        raise GatewayError.invalid_input("`grant_type` must be authorization_code or refresh_token")
    form = {"grant_type": grant}
    for name in _GRANTS[grant]:
        value = fields.get(name)
        if not isinstance(value, str) or not value or len(value) > MAX_FIELD_CHARS:
            raise GatewayError.invalid_input(
                f"`{name}` must be a string of at most {MAX_FIELD_CHARS} characters"
            )
        form[name] = value
    return form


def _object(value: object) -> dict[str, object]:
    """A JSON object's fields (anything else: none)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in cast("dict[object, object]", value).items()}
