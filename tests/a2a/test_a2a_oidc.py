"""A2A with the provider's tokens: the card declares the OpenID Connect scheme, a client uses it.

The client reads the public card, finds the `oidc` scheme's discovery URL and the scopes its
requirement names, signs the user in at that provider (tests/oidc_provider.py: login page, code +
PKCE), and runs a task with the SDK's `AuthInterceptor` putting the token on each call.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.types.a2a_pb2 import AgentCard, TaskState
from google.protobuf.json_format import ParseDict

from gateway.identity.settings import IdentitySettings, OidcSettings
from testing import AgentTestEnvironment
from tests.a2a_helpers import message, stream_events
from tests.gateway_helpers import TEST_AGENTS, TEST_TOKENS, GatewayServer, loopback_socket, running_gateway
from tests.oidc_helpers import OidcProvider, running_provider

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deployment(agents: AgentTestEnvironment) -> AsyncIterator[tuple[GatewayServer, OidcProvider]]:
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with running_provider(audience=url) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=url)
        async with running_gateway(
            agents, TEST_AGENTS, tokens=TEST_TOKENS, identity=IdentitySettings(oidc=oidc), sock=sock
        ) as gateway:
            yield gateway, provider


class SignedIn(CredentialService):
    """The token of the user who signed in, for the card's `oidc` scheme only."""

    def __init__(self, scheme: str, token: str) -> None:
        self._scheme = scheme
        self._token = token

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        return self._token if security_scheme_name == self._scheme else None


async def test_a_client_uses_the_cards_openid_connect_scheme(
    deployment: tuple[GatewayServer, OidcProvider],
) -> None:
    gateway, provider = deployment
    async with httpx.AsyncClient(timeout=60) as http:
        card_json = (await http.get(f"{gateway.url}/a2a/default/.well-known/agent-card.json")).json()
    card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
    [(name, scheme)] = [
        (n, s) for n, s in card.security_schemes.items() if s.HasField("open_id_connect_security_scheme")
    ]
    discovery = scheme.open_id_connect_security_scheme.open_id_connect_url
    assert discovery == f"{provider.issuer}/.well-known/openid-configuration"
    [scopes] = [list(r.schemes[name].list) for r in card.security_requirements if name in r.schemes]
    assert scopes == ["agents:ask", "agents:approve"]
    assert "bearer" in card.security_schemes  # the static tokens still work beside it

    async with httpx.AsyncClient() as http:
        assert (await http.get(discovery)).json()["issuer"] == provider.issuer
    tokens = await provider.sign_in("alice", scope=" ".join(scopes))

    async with httpx.AsyncClient(timeout=60) as http:  # no Authorization header of its own
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(
            card, interceptors=[AuthInterceptor(SignedIn(name, tokens["access_token"]))]
        )
        context = f"a2a-oidc-{uuid.uuid4().hex[:6]}"
        [response] = await stream_events(client.send_message(message("Hello?", context_id=context)))
        await client.close()
    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert response.task.context_id == context
