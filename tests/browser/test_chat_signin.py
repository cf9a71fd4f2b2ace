"""The chat page signs in with the gateway's OpenID provider, in a real browser (Playwright, chromium).

The provider (tests/oidc_provider.py, a process) has the page's public client; the page sends the
user to the provider's login page (authorization code with PKCE, no secret in the page), comes
back signed in, talks to an agent as that user, renews its token before it expires (the
provider's tokens live 65 s here, renewal starts a minute before), and signs out.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import jwt
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from gateway.identity.settings import IdentitySettings, OidcSettings
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.browser_helpers import chromium
from tests.gateway_helpers import TEST_TOKENS, GatewayServer, loopback_socket, running_gateway
from tests.oidc_helpers import TEST_USERS, OidcProvider, running_provider

pytestmark = pytest.mark.asyncio(loop_scope="session")

ANSWER = "Hello, signed-in user."
WAIT_MS = 60_000
TOKEN_TTL_S = 65
TOKEN_KEY = "react-chat:token"


@dataclass
class SignIn:
    gateway: GatewayServer
    provider: OidcProvider
    browser: Browser


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def signin(agents: AgentTestEnvironment) -> AsyncIterator[SignIn]:
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    clients = {"chat-page": [f"{url}/"]}
    async with running_provider(audience=url, clients=clients, token_ttl_s=TOKEN_TTL_S) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=url, client_id="chat-page")
        agents_of_page = {"default": scripted_agent(answer(ANSWER), stream=True)}
        async with (
            running_gateway(
                agents, agents_of_page, tokens=TEST_TOKENS, identity=IdentitySettings(oidc=oidc), sock=sock
            ) as gateway,
            chromium() as browser,
        ):
            yield SignIn(gateway, provider, browser)


async def _token(page: Page) -> str:
    return str(await page.evaluate(f"localStorage.getItem('{TOKEN_KEY}') || ''"))


async def test_a_user_signs_in_at_the_provider_talks_to_an_agent_renews_and_signs_out(signin: SignIn) -> None:
    context = await signin.browser.new_context()
    page = await context.new_page()
    page.on("pageerror", lambda error: print(f"page error: {error}"))
    await page.goto(signin.gateway.url + "/")
    await page.locator("#sign-in").click(timeout=WAIT_MS)

    # The provider's own login page.
    await expect(page).to_have_url(re.compile(re.escape(signin.provider.issuer)), timeout=WAIT_MS)
    await page.locator("#username").fill("alice")
    await page.locator("#password").fill(TEST_USERS["alice"]["password"])
    await page.locator("#kc-login").click()

    # Back on the page, signed in: the code was traded, the URL is clean.
    await expect(page.locator("#sign-out")).to_be_visible(timeout=WAIT_MS)
    await expect(page.locator("#sign-in")).to_be_hidden()
    assert "code=" not in page.url
    first = await _token(page)
    assert jwt.decode(first, options={"verify_signature": False})["sub"] == "alice"
    await expect(page.locator("#agent option[data-kind=profile]")).to_have_count(1, timeout=WAIT_MS)

    await page.locator("#message").fill("Hi")
    await page.locator("#send").click()
    await expect(page.locator("#chat")).to_contain_text(ANSWER, timeout=WAIT_MS)
    thread = re.search(r"thread=([A-Za-z0-9_.-]+)", page.url)
    assert thread is not None
    async with signin.gateway.http(first) as http:  # the thread is alice's, as the provider named her
        assert (await http.get(f"/api/threads/default/{thread.group(1)}")).status_code == 200

    # Renewal: a new token before the first expires (65 s tokens, renewed a minute early).
    await page.wait_for_function(
        f"t => (localStorage.getItem('{TOKEN_KEY}') || '') !== t && localStorage.getItem('{TOKEN_KEY}')",
        arg=first,
        timeout=WAIT_MS,
    )
    assert await _token(page) != first

    await page.locator("#sign-out").click()
    await expect(page.locator("#sign-in")).to_be_visible(timeout=WAIT_MS)
    assert await _token(page) == ""
    await context.close()


async def test_the_token_exchange_takes_two_grants_and_passes_refusals_on(signin: SignIn) -> None:
    async with signin.gateway.http() as http:  # no token: these routes are how a page gets one
        config = (await http.get("/api/identity")).json()
        assert config["client_id"] == "chat-page"
        assert config["authorization_endpoint"].startswith(signin.provider.issuer)
        for body in [
            {},
            {"grant_type": "password", "username": "alice"},
            {"grant_type": "refresh_token"},
            [1],
        ]:
            refused = await http.post("/api/identity/token", json=body)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input", body
        bad_code = {
            "grant_type": "authorization_code",
            "code": "x",
            "code_verifier": "y",
            "redirect_uri": "z",
        }
        refused = await http.post("/api/identity/token", json=bad_code)
        assert refused.status_code == 400 and "invalid_grant" in refused.json()["error"]["message"]
