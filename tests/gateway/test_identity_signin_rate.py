"""The chat page's token exchange (`POST /api/identity/token`) is rate-limited per client address by default.

It relays to the identity provider before the caller has a token, so nothing else limits it: a
burst of 200 calls from one address meets 429 `rate_limited` with `Retry-After` (the default
`REACT_GATEWAY_SIGNIN_PER_MINUTE`, 60), while another address is not held back; the setting is
read from the environment.
"""

from __future__ import annotations

import httpx
import pytest

from gateway.identity.settings import (
    DEFAULT_SIGNIN_PER_MINUTE,
    IdentitySettings,
    OidcSettings,
    load_identity,
)
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.gateway_helpers import loopback_socket, running_gateway
from tests.oidc_helpers import running_provider

pytestmark = pytest.mark.asyncio(loop_scope="session")

BAD_CODE = {"grant_type": "authorization_code", "code": "x", "code_verifier": "y", "redirect_uri": "z"}


async def test_a_burst_of_token_exchanges_meets_429_per_address(agents: AgentTestEnvironment) -> None:
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with running_provider(audience=url, clients={"chat-page": [f"{url}/"]}) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=url, client_id="chat-page")
        async with running_gateway(agents, identity=IdentitySettings(oidc=oidc), sock=sock) as gateway:
            statuses: list[int] = []
            response: httpx.Response | None = None
            async with gateway.http() as http:
                for _ in range(200):
                    response = await http.post("/api/identity/token", json=BAD_CODE)
                    statuses.append(response.status_code)
                    if response.status_code == 429:
                        break
            assert response is not None and statuses[-1] == 429, statuses
            # A minute's burst passed (and what refilled meanwhile: each call is relayed), then 429.
            assert len(statuses) > DEFAULT_SIGNIN_PER_MINUTE and set(statuses[:-1]) == {400}
            assert response.json()["error"]["code"] == "rate_limited"
            assert "60 requests a minute" in response.json()["error"]["message"]
            assert 1 <= int(response.headers["retry-after"]) <= 2
            # Another client address is not held back by this one's burst.
            other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
            async with httpx.AsyncClient(base_url=url, transport=other, timeout=30) as http:
                assert (await http.post("/api/identity/token", json=BAD_CODE)).status_code == 400


async def test_the_exchange_rate_is_a_setting() -> None:
    assert load_identity({}).quotas.signin_per_minute == DEFAULT_SIGNIN_PER_MINUTE
    assert load_identity({"REACT_GATEWAY_SIGNIN_PER_MINUTE": "5"}).quotas.signin_per_minute == 5
    with pytest.raises(SettingsError, match="REACT_GATEWAY_SIGNIN_PER_MINUTE"):
        load_identity({"REACT_GATEWAY_SIGNIN_PER_MINUTE": "0"})
