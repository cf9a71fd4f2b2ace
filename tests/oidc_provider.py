"""A small OpenID provider for the tests: its own RSA keys, discovery, JWKS, a login page, PKCE.

    python -m tests.oidc_provider --port 9000 --users '{"alice": {"password": "pw", "scopes": "agents:ask"}}'

It is a real provider over HTTP on 127.0.0.1 (the gateway discovers and verifies it as it would
Keycloak or Auth0), made for tests: one realm at `/realms/test` (the issuer), public clients
registered dynamically (RFC 7591: what MCP hosts do) or given on the command line, the
authorization code grant with PKCE (S256 only) through an HTML login form, refresh tokens, and
RFC 8707 resource indicators (a token's `aud` is the `resource` asked for, else `--audience`).
Access tokens are RS256 JWTs with `iss`, `sub` (the user name), `aud`, `exp`, `iat`, `nbf`,
`scope` (what was asked, less what the user may not have) and `azp`.

Test-only endpoints under `/admin/`: `GET /admin/stats` (how often the JWKS was read),
`POST /admin/clients` (register a public client), `POST /admin/rotate` (a new signing key;
`{"keep_old": false}` drops the old ones from the JWKS) and `POST /admin/mint` (a token of the
current key with the claims given, merged over the usual ones: expired, early, wrong audience or
issuer). Nothing here is fit for production (no consent, no sessions, plain passwords).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlencode

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

REALM = "/realms/test"
CODE_TTL_S = 120


@dataclass
class SigningKey:
    """One RSA key of the provider."""

    kid: str
    private: rsa.RSAPrivateKey

    def jwk(self) -> dict[str, Any]:
        """Its public JWK."""
        public = cast("dict[str, Any]", json.loads(RSAAlgorithm.to_jwk(self.private.public_key())))
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}


def new_key() -> SigningKey:
    """A fresh 2048-bit RSA key with a random kid."""
    return SigningKey(secrets.token_hex(8), rsa.generate_private_key(public_exponent=65537, key_size=2048))


@dataclass
class Provider:
    """The provider's state: keys, users, clients, codes and refresh tokens."""

    base: str
    audience: str
    users: dict[str, dict[str, str]]
    token_ttl_s: int
    keys: list[SigningKey] = field(default_factory=lambda: [new_key()])
    clients: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """client_id -> redirect URIs."""
    codes: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    refresh: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    jwks_reads: int = 0

    @property
    def issuer(self) -> str:
        """The realm's issuer."""
        return f"{self.base}{REALM}"

    def metadata(self) -> dict[str, Any]:
        """The discovery document."""
        issuer = self.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/protocol/openid-connect/auth",
            "token_endpoint": f"{issuer}/protocol/openid-connect/token",
            "jwks_uri": f"{issuer}/protocol/openid-connect/certs",
            "registration_endpoint": f"{issuer}/clients-registrations",
            "end_session_endpoint": f"{issuer}/protocol/openid-connect/logout",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [
                "openid",
                "agents:ask",
                "agents:approve",
                "agents:schedules",
                "agents:admin",
            ],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def sign(self, claims: dict[str, Any]) -> str:
        """`claims` signed with the current key."""
        key = self.keys[-1]
        return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": key.kid})

    def access_token(self, user: str, scope: str, audience: str, client_id: str) -> str:
        """A user's access token."""
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.token_ttl_s,
            "scope": scope,
            "azp": client_id,
            "jti": secrets.token_hex(8),
        }
        return self.sign(claims)

    def granted(self, user: str, asked: str) -> str:
        """The scopes of `asked` the user may have (all of theirs when none is asked)."""
        allowed = self.users[user].get("scopes", "").split()
        if not asked.strip():
            return " ".join(allowed)
        return " ".join(s for s in asked.split() if s in allowed or s in ("openid", "offline_access"))


def _error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def _challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


LOGIN_PAGE = """<!doctype html><html><head><title>Sign in to test</title></head><body>
<h1>Sign in to test</h1><form method="post" action="{action}">
{hidden}
<label>Username <input name="username" id="username" autocomplete="username"></label>
<label>Password <input name="password" id="password" type="password"></label>
<button type="submit" id="kc-login">Sign in</button></form>{error}</body></html>"""

AUTHORIZE_FIELDS = (
    "client_id",
    "redirect_uri",
    "state",
    "scope",
    "code_challenge",
    "code_challenge_method",
    "resource",
    "nonce",
)


def build_app(provider: Provider) -> Starlette:
    """The provider's HTTP app."""
    meta = provider.metadata()

    def path_of(url: str) -> str:
        return url.removeprefix(provider.base)

    async def discovery(request: Request) -> Response:
        return JSONResponse(meta)

    async def jwks(request: Request) -> Response:
        provider.jwks_reads += 1
        return JSONResponse({"keys": [key.jwk() for key in provider.keys]})

    def check_authorize(params: dict[str, str]) -> str | None:
        uris = provider.clients.get(params.get("client_id", ""))
        if uris is None:
            return "unknown client_id"
        if params.get("redirect_uri") not in uris:
            return "redirect_uri is not registered for this client"
        if params.get("code_challenge_method") != "S256" or len(params.get("code_challenge", "")) < 43:
            return "PKCE with S256 is required"
        return None

    def login_page(params: dict[str, str], error: str = "") -> HTMLResponse:
        hidden = "\n".join(
            f'<input type="hidden" name="{name}" value="{html.escape(params[name])}">'
            for name in AUTHORIZE_FIELDS
            if name in params
        )
        page = LOGIN_PAGE.format(
            action=html.escape(meta["authorization_endpoint"]),
            hidden=hidden,
            error=f'<p id="error">{html.escape(error)}</p>' if error else "",
        )
        return HTMLResponse(page, status_code=401 if error else 200)

    async def authorize(request: Request) -> Response:
        params = dict(request.query_params)
        if params.get("response_type") != "code":
            return _error(400, "unsupported_response_type", "only response_type=code")
        problem = check_authorize(params)
        if problem is not None:
            return _error(400, "invalid_request", problem)
        return login_page(params)

    async def login(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        problem = check_authorize(form)
        if problem is not None:
            return _error(400, "invalid_request", problem)
        user = form.get("username", "")
        if user not in provider.users or not secrets.compare_digest(
            provider.users[user]["password"].encode(), form.get("password", "").encode()
        ):
            return login_page(form, "Invalid username or password.")
        code = secrets.token_urlsafe(24)
        provider.codes[code] = {**form, "user": user, "at": time.time()}
        query = {"code": code, "iss": provider.issuer}
        if "state" in form:
            query["state"] = form["state"]
        return RedirectResponse(f"{form['redirect_uri']}?{urlencode(query)}", status_code=302)

    def tokens(user: str, scope: str, resource: str, client_id: str) -> JSONResponse:
        audience = resource or provider.audience
        refresh = secrets.token_urlsafe(24)
        provider.refresh[refresh] = {
            "user": user,
            "scope": scope,
            "resource": resource,
            "client_id": client_id,
        }
        now = int(time.time())
        id_token = provider.sign(
            {
                "iss": provider.issuer,
                "sub": user,
                "aud": client_id,
                "iat": now,
                "exp": now + provider.token_ttl_s,
            }
        )
        body = {
            "access_token": provider.access_token(user, scope, audience, client_id),
            "token_type": "Bearer",
            "expires_in": provider.token_ttl_s,
            "refresh_token": refresh,
            "id_token": id_token,
            "scope": scope,
        }
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    async def token(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            issued = provider.codes.pop(form.get("code", ""), None)
            if issued is None or time.time() - issued["at"] > CODE_TTL_S:
                return _error(400, "invalid_grant", "unknown or expired code")
            if (
                form.get("client_id") != issued["client_id"]
                or form.get("redirect_uri") != issued["redirect_uri"]
            ):
                return _error(
                    400, "invalid_grant", "client_id or redirect_uri differs from the authorization"
                )
            if _challenge_of(form.get("code_verifier", "")) != issued["code_challenge"]:
                return _error(400, "invalid_grant", "PKCE verification failed")
            scope = provider.granted(issued["user"], issued.get("scope", ""))
            resource = form.get("resource") or issued.get("resource", "")
            return tokens(issued["user"], scope, resource, issued["client_id"])
        if grant == "refresh_token":
            held = provider.refresh.pop(form.get("refresh_token", ""), None)
            if held is None or held["client_id"] != form.get("client_id"):
                return _error(400, "invalid_grant", "unknown refresh token")
            return tokens(held["user"], held["scope"], held["resource"], held["client_id"])
        return _error(400, "unsupported_grant_type", "authorization_code or refresh_token")

    async def register(request: Request) -> Response:
        body: object = await request.json()
        fields = cast("dict[str, Any]", body) if isinstance(body, dict) else {}
        uris: object = fields.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):  # pyright: ignore[reportUnknownVariableType]
            return _error(400, "invalid_redirect_uri", "redirect_uris are required")
        client_id = f"dyn-{secrets.token_hex(6)}"
        provider.clients[client_id] = cast("list[str]", uris)
        answer = {
            **fields,
            "client_id": client_id,
            "client_id_issued_at": int(time.time()),
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
        return JSONResponse(answer, status_code=201)

    async def logout(request: Request) -> Response:
        target = request.query_params.get("post_logout_redirect_uri")
        return RedirectResponse(target, status_code=302) if target else HTMLResponse("<p>Signed out.</p>")

    async def rotate(request: Request) -> Response:
        body = cast("dict[str, Any]", await request.json()) if await request.body() else {}
        key = new_key()
        provider.keys = [*provider.keys, key] if body.get("keep_old", True) else [key]
        return JSONResponse({"kid": key.kid})

    async def mint(request: Request) -> Response:
        body = cast("dict[str, Any]", await request.json())
        user = str(body.pop("sub", "alice"))
        claims = jwt.decode(
            provider.access_token(user, str(body.pop("scope", "")), provider.audience, "admin"),
            options={"verify_signature": False},
        )
        claims.update(body)
        claims = {k: v for k, v in claims.items() if v is not None}
        return JSONResponse({"access_token": provider.sign(claims), "kid": provider.keys[-1].kid})

    async def stats(request: Request) -> Response:
        return JSONResponse({"jwks_reads": provider.jwks_reads})

    async def add_client(request: Request) -> Response:
        body = cast("dict[str, Any]", await request.json())
        provider.clients[str(body["client_id"])] = [str(u) for u in body["redirect_uris"]]
        return JSONResponse({"client_id": body["client_id"]})

    routes = [
        Route(f"{REALM}/.well-known/openid-configuration", discovery),
        Route(path_of(meta["jwks_uri"]), jwks),
        Route(path_of(meta["authorization_endpoint"]), authorize, methods=["GET"]),
        Route(path_of(meta["authorization_endpoint"]), login, methods=["POST"]),
        Route(path_of(meta["token_endpoint"]), token, methods=["POST"]),
        Route(path_of(meta["registration_endpoint"]), register, methods=["POST"]),
        Route(path_of(meta["end_session_endpoint"]), logout),
        Route("/admin/rotate", rotate, methods=["POST"]),
        Route("/admin/mint", mint, methods=["POST"]),
        Route("/admin/clients", add_client, methods=["POST"]),
        Route("/admin/stats", stats),
    ]
    cors = Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET", "POST"], allow_headers=["*"])
    return Starlette(routes=routes, middleware=[cors])


def main() -> None:
    """Serve the provider on 127.0.0.1 until killed."""
    parser = argparse.ArgumentParser(description="A small OpenID provider for the tests.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--audience", required=True, help="a token's aud when no resource is asked for")
    parser.add_argument("--users", required=True, help='{"name": {"password": ..., "scopes": "a b"}}')
    parser.add_argument("--clients", default="{}", help='{"client_id": ["redirect URI", ...]}')
    parser.add_argument("--token-ttl", type=int, default=300)
    args = parser.parse_args()
    provider = Provider(
        base=f"http://127.0.0.1:{args.port}",
        audience=args.audience,
        users=json.loads(args.users),
        token_ttl_s=args.token_ttl,
        clients=json.loads(args.clients),
    )
    uvicorn.run(build_app(provider), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
