"""The MCP authorization spec on `/mcp`, end to end with the official client's OAuth support.

The gateway trusts the test provider (tests/oidc_provider.py, a process). An MCP host that knows
only the gateway's URL gets 401 with `resource_metadata`, reads the protected resource metadata
(RFC 9728), discovers the provider, registers itself (RFC 7591), signs the user in through the
provider's login page (authorization code with PKCE, `resource` = `<audience>/mcp`), and calls
`ask`. A token without `agents:approve` gets 403 `insufficient_scope` for `approve`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import jwt
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from gateway.identity.settings import IdentitySettings, OidcSettings
from testing import AgentTestEnvironment
from tests.gateway_helpers import TEST_TOKENS, GatewayServer, loopback_socket, running_gateway
from tests.oidc_helpers import REDIRECT_URI, TEST_USERS, OidcProvider, running_provider

pytestmark = pytest.mark.asyncio(loop_scope="session")

JSONRPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Deployment:
    gateway: GatewayServer
    provider: OidcProvider


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deployment(agents: AgentTestEnvironment) -> AsyncIterator[Deployment]:
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with running_provider(audience=url) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=url)
        async with running_gateway(
            agents, tokens=TEST_TOKENS, identity=IdentitySettings(oidc=oidc), sock=sock
        ) as gateway:
            yield Deployment(gateway, provider)


class MemoryStorage:
    """The host's token storage (the SDK's `TokenStorage`)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_an_unauthenticated_call_points_to_the_resource_metadata(deployment: Deployment) -> None:
    url = deployment.gateway.url
    async with httpx.AsyncClient(base_url=url) as http:
        refused = await http.post("/mcp", content=b"{}", headers=JSONRPC_HEADERS)
        assert refused.status_code == 401
        expected = f'Bearer resource_metadata="{url}/.well-known/oauth-protected-resource/mcp"'
        assert refused.headers["www-authenticate"] == expected
        assert refused.json()["error"]["data"]["code"] == "unauthorized"
        metadata = await http.get("/.well-known/oauth-protected-resource/mcp")
    assert metadata.status_code == 200
    body = metadata.json()
    assert body["resource"] == f"{url}/mcp"
    assert body["authorization_servers"] == [deployment.provider.issuer]
    assert body["scopes_supported"] == [
        "agents:ask",
        "agents:approve",
        "agents:schedules",
        "agents:admin",
        "memory:read",
        "memory:write",
        "agents:manage",
    ]
    assert body["bearer_methods_supported"] == ["header"]


async def test_an_mcp_host_signs_in_through_discovery_and_asks(deployment: Deployment) -> None:
    gateway, provider = deployment.gateway, deployment.provider
    storage = MemoryStorage()
    redirected: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        # The user's browser: the provider's login page, then the redirect back to the host.
        redirected.append(
            await provider.login_redirect(authorization_url, "alice", TEST_USERS["alice"]["password"])
        )

    async def callback_handler() -> AuthorizationCodeResult:
        params = parse_qs(urlsplit(redirected[-1]).query)
        return AuthorizationCodeResult(code=params["code"][0], state=params["state"][0], iss=params["iss"][0])

    oauth = OAuthClientProvider(
        server_url=f"{gateway.url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="test MCP host",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    session = f"oauth-{uuid.uuid4().hex[:6]}"
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("ask", {"query": "Hi", "session": session})
    assert not result.is_error, result
    assert result.structured_content is not None and result.structured_content["status"] == "completed"
    assert len(redirected) == 1  # one sign-in
    assert storage.client is not None and storage.client.client_id.startswith("dyn-")  # registered itself
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == f"{gateway.url}/mcp" and claims["sub"] == "alice"  # RFC 8707: the resource


async def test_a_token_without_the_scope_gets_insufficient_scope(deployment: Deployment) -> None:
    gateway, provider = deployment.gateway, deployment.provider
    tokens = await provider.sign_in("bob", scope="agents:ask agents:approve", resource=f"{gateway.url}/mcp")
    assert tokens["scope"] == "agents:ask"  # the provider grants bob no more
    call: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "approve"},
    }
    headers = {**JSONRPC_HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/mcp", content=json.dumps(call), headers=headers)
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="agents:approve", '
        f'resource_metadata="{gateway.url}/.well-known/oauth-protected-resource/mcp"'
    )
    # A token for the MCP resource is not a token for the rest of the gateway (its audience).
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"Authorization": headers["Authorization"]}
    ) as http:
        elsewhere = await http.get("/api/threads")
    assert (
        elsewhere.status_code == 401
        and 'error_description="audience"' in elsewhere.headers["www-authenticate"]
    )
