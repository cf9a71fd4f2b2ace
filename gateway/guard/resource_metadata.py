"""The MCP authorization spec's parts at the gateway: the protected resource metadata and the challenges.

`GET /.well-known/oauth-protected-resource/mcp` (RFC 9728, no token) tells an MCP host which
authorization server issues tokens for `<audience>/mcp` and which scopes exist; every 401 on
`/mcp` points to it (`WWW-Authenticate: Bearer resource_metadata="..."`), and a 403 says
`error="insufficient_scope"` with the scope needed, so a host can ask the user for more. Without
an OpenID provider the document is 404 (static tokens are handed out, not discovered).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.errors import not_found
from gateway.identity.scopes import ALL_SCOPES
from gateway.identity.settings import OidcSettings

__all__ = ["MCP_PATH", "RESOURCE_METADATA_PATH", "challenge", "resource_metadata", "routes"]

MCP_PATH = "/mcp"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


def resource_metadata(oidc: OidcSettings) -> dict[str, object]:
    """The MCP endpoint's protected resource metadata (RFC 9728)."""
    return {
        "resource": oidc.mcp_resource,
        "authorization_servers": [oidc.issuer],
        "scopes_supported": list(ALL_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Durable ReAct agents (MCP)",
    }


def challenge(
    oidc: OidcSettings | None, path: str, *, error: str | None = None, scope: str | None = None
) -> str:
    """The `WWW-Authenticate` value of a 401 or 403 on `path` (RFC 6750; RFC 9728 on `/mcp`)."""
    params: list[str] = []
    if error is not None:
        params.append(f'error="{error}"')
    if scope is not None:
        params.append(f'scope="{scope}"')
    if oidc is not None and path == MCP_PATH:
        params.append(f'resource_metadata="{oidc.audience}{RESOURCE_METADATA_PATH}"')
    return "Bearer " + ", ".join(params) if params else "Bearer"


def routes(oidc: OidcSettings | None) -> list[BaseRoute]:
    """The metadata route (public: the guard lets it through without a token)."""

    async def metadata(request: Request) -> Response:
        if oidc is None:
            raise not_found("protected resource")
        return JSONResponse(resource_metadata(oidc), headers={"Cache-Control": "max-age=300"})

    return [Route(RESOURCE_METADATA_PATH, metadata, methods=["GET"])]
