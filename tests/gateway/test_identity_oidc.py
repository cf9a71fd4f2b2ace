"""Bearer tokens of a real OpenID provider (tests/oidc_provider.py, a process) beside the static tokens.

A user signs in through the provider's login page (code + PKCE) and asks over AG-UI with the
access token; every bad token is refused by name (401 `unauthorized`, `WWW-Authenticate: Bearer
error="invalid_token"`, `error_description` naming the check) and none reaches a workflow; key
rotation is followed, and random `kid`s do not make the gateway hammer the provider.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from gateway.errors import GatewayError
from gateway.guard.admission import Admission
from gateway.identity.principal import PRINCIPAL_PATTERN, is_static_name, provider_principal
from gateway.identity.settings import (
    IdentitySettings,
    OidcSettings,
    parse_principal_map,
)
from gateway.settings import GatewaySettings, parse_tokens
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.gateway_helpers import (
    ALICE,
    TEST_TOKENS,
    GatewayServer,
    agui_run,
    loopback_socket,
    run_input,
    running_gateway,
)
from tests.oidc_helpers import OidcProvider, free_port, running_provider

pytestmark = pytest.mark.asyncio(loop_scope="session")

REFRESH_MIN_S = 1.0


@dataclass
class Deployment:
    """A gateway trusting a provider."""

    gateway: GatewayServer
    provider: OidcProvider


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deployment(agents: AgentTestEnvironment) -> AsyncIterator[Deployment]:
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with running_provider(audience=url) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=url, keys_refresh_min_s=REFRESH_MIN_S)
        async with running_gateway(
            agents, tokens=TEST_TOKENS, identity=IdentitySettings(oidc=oidc), sock=sock
        ) as gateway:
            yield Deployment(gateway, provider)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _claims(provider: OidcProvider, audience: str, sub: str = "mallory", **more: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "aud": audience,
        "sub": sub,
        "iat": now,
        "exp": now + 300,
        "scope": "agents:ask",
    }
    return {**claims, **more}


def _hmac_with_public_key(claims: dict[str, Any], kid: str, public_pem: bytes) -> str:
    """The classic confusion attack: HS256 keyed with the provider's public key."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = hmac.new(public_pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def _unsigned(claims: dict[str, Any]) -> str:
    """`alg: none`, no signature."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}."


async def _ask(gateway: GatewayServer, token: str, thread: str) -> tuple[int, dict[str, str], str]:
    async with gateway.http(token) as http:
        response = await http.post("/agui/default", json=run_input(thread, f"{thread}-r1"))
        return response.status_code, dict(response.headers), response.text


async def test_a_user_signed_in_at_the_provider_asks_and_owns_the_thread(deployment: Deployment) -> None:
    gateway, provider = deployment.gateway, deployment.provider
    tokens = await provider.sign_in("alice", scope="agents:ask")
    thread = f"oidc-{uuid.uuid4().hex[:8]}"
    async with gateway.http(tokens["access_token"]) as http:
        events = await agui_run(http, run_input(thread, f"{thread}-r1"))
        assert events[-1].type == "RUN_FINISHED"
        listed = (await http.get("/api/threads")).json()["threads"]
    assert thread in [t["thread_id"] for t in listed]
    # The provider's alice is not static alice: her thread is not the static token's.
    owner = provider_principal(provider.issuer, "alice")
    assert owner.startswith("oidc.") and owner != "alice"
    assert await gateway.ctx.sessions.get(f"gw/{owner}/default/{thread}").status()
    async with gateway.http(ALICE) as http:
        assert (await http.get(f"/api/threads/default/{thread}")).status_code == 404


async def test_a_provider_user_is_a_static_principal_only_when_mapped(
    deployment: Deployment, agents: AgentTestEnvironment
) -> None:
    provider = deployment.provider
    oidc = OidcSettings(
        issuer=provider.issuer, audience=deployment.gateway.url, principal_map={"alice": "alice"}
    )
    tokens = await provider.sign_in("alice", scope="agents:ask")
    async with running_gateway(agents, tokens=TEST_TOKENS, identity=IdentitySettings(oidc=oidc)) as mapped:
        thread = f"mapped-{uuid.uuid4().hex[:8]}"
        async with mapped.http(tokens["access_token"]) as http:
            events = await agui_run(http, run_input(thread, f"{thread}-r1"))
            assert events[-1].type == "RUN_FINISHED"
        # Mapped on purpose: one principal, two ways in.
        async with mapped.http(ALICE) as http:
            assert (await http.get(f"/api/threads/default/{thread}")).status_code == 200


async def test_provider_principals_never_meet_static_ones_nor_other_issuers() -> None:
    one, other = "https://login.example.com/realms/a", "https://login.example.com/realms/b"
    assert provider_principal(one, "alice") != provider_principal(other, "alice")
    for value in ("alice", "8d2f1c3e-0b6a-4c1e-9f7d-5a2b3c4d5e6f", "ann@example.com", "auth0|64f0"):
        name = provider_principal(one, value)
        assert PRINCIPAL_PATTERN.fullmatch(name) and not is_static_name(name), name
    # A user name chosen to look like another's hashed name is still another principal.
    long_name = provider_principal(one, "x" * 40)
    assert provider_principal(one, long_name.split("-", 1)[1]) != long_name
    with pytest.raises(SettingsError, match=r"oidc\."):
        parse_tokens("a-token-of-20-characters=oidc.abcdef.alice")
    with pytest.raises(SettingsError, match="REACT_GATEWAY_OIDC_PRINCIPAL_MAP"):
        parse_principal_map("alice=oidc.abcdef.alice")
    assert dict(parse_principal_map(" alice = alice , ci@acme.com=ci-bot")) == {
        "alice": "alice",
        "ci@acme.com": "ci-bot",
    }


async def test_every_bad_token_is_refused_by_name_and_reaches_no_workflow(
    deployment: Deployment, agents: AgentTestEnvironment
) -> None:
    gateway, provider = deployment.gateway, deployment.provider
    audience = gateway.url
    now = int(time.time())
    current = (await provider.jwks())["keys"][-1]
    public_pem = RSAAlgorithm.from_jwk(json.dumps(current)).public_bytes(  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType, reportUnknownMemberType]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cases: dict[str, tuple[str, str]] = {
        "expired": (
            await provider.mint(sub="mallory", exp=now - 600, iat=now - 900, nbf=now - 900),
            "expired",
        ),
        "early": (await provider.mint(sub="mallory", nbf=now + 600), "not_yet_valid"),
        "wrong audience": (await provider.mint(sub="mallory", aud="http://elsewhere.example"), "audience"),
        "wrong issuer": (await provider.mint(sub="mallory", iss="http://127.0.0.1:9/realms/evil"), "issuer"),
        "no exp": (await provider.mint(sub="mallory", exp=None), "missing_claim"),
        "alg none": (_unsigned(_claims(provider, audience)), "algorithm"),
        "HMAC with the public key": (
            _hmac_with_public_key(_claims(provider, audience), current["kid"], public_pem),  # pyright: ignore[reportUnknownArgumentType]
            "algorithm",
        ),
        "signed by another key, the provider's kid": (
            jwt.encode(
                _claims(provider, audience), foreign, algorithm="RS256", headers={"kid": current["kid"]}
            ),
            "signature",
        ),
        "oversized": (await provider.mint(sub="mallory", pad="x" * 9000), "oversized"),
        "garbage": ("not-a-token-at-all", "malformed"),
        "three garbage parts": ("abc.def.ghi", "malformed"),
        "a principal claim that is not printable": (await provider.mint(sub="mallory\n"), "principal"),
        "a principal claim too long": (await provider.mint(sub="m" * 256), "principal"),
    }
    for name, (token, reason) in cases.items():
        status, headers, text = await _ask(gateway, token, f"bad-{uuid.uuid4().hex[:6]}")
        assert status == 401, (name, status, text)
        body = json.loads(text)
        assert body["error"]["code"] == "unauthorized", name
        assert reason in body["error"]["message"], (name, body)
        challenge = headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token"'), (name, challenge)
        assert f'error_description="{reason}"' in challenge, (name, challenge)
    # No token at all: a plain challenge.
    status, headers, _ = await _ask(gateway, "", "none")
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    async with gateway.http() as http:  # no chat-page client configured: no sign-in offered
        assert (await http.get("/api/identity")).json() == {"client_id": None}
        assert (await http.post("/api/identity/token", json={})).status_code == 404

    # Nothing reached a workflow: mallory has none, although a good token of theirs makes one.
    query = f"WorkflowId STARTS_WITH 'gw/{provider_principal(provider.issuer, 'mallory')}/'"
    assert (await agents.client.count_workflows(query)).count == 0
    good = await provider.mint(sub="mallory", scope="agents:ask")
    async with gateway.http(good) as http:
        events = await agui_run(http, run_input("mallory-control", "mallory-control-r1"))
        assert events[-1].type == "RUN_FINISHED"
    assert (await agents.client.count_workflows(query)).count >= 1


async def test_key_rotation_is_followed_and_random_kids_do_not_hammer_the_provider(
    deployment: Deployment,
) -> None:
    gateway, provider = deployment.gateway, deployment.provider
    before_rotation = await provider.mint(sub="alice", scope="agents:ask")
    assert (await _ask(gateway, before_rotation, f"rot-{uuid.uuid4().hex[:6]}"))[0] == 200

    # A new signing key (the old one still published): tokens of both keys pass.
    await provider.rotate(keep_old=True)
    after = await provider.mint(sub="alice", scope="agents:ask")
    assert (await _ask(gateway, after, f"rot-{uuid.uuid4().hex[:6]}"))[0] == 200
    assert (await _ask(gateway, before_rotation, f"rot-{uuid.uuid4().hex[:6]}"))[0] == 200

    # The old key leaves the JWKS: once the gateway refetches (a new kid makes it), its tokens fail.
    await provider.rotate(keep_old=False)
    await asyncio.sleep(REFRESH_MIN_S + 0.1)  # the gateway refetches keys at most this often, by design
    newest = await provider.mint(sub="alice", scope="agents:ask")
    assert (await _ask(gateway, newest, f"rot-{uuid.uuid4().hex[:6]}"))[0] == 200
    status, headers, _ = await _ask(gateway, before_rotation, f"rot-{uuid.uuid4().hex[:6]}")
    assert status == 401 and 'error_description="unknown_key"' in headers["www-authenticate"]

    # Fifty tokens with random kids within the refetch interval: at most one more JWKS read.
    reads = await provider.jwks_reads()
    started = time.monotonic()
    foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for _ in range(50):
        token = jwt.encode(
            _claims(provider, gateway.url), foreign, algorithm="RS256", headers={"kid": secrets.token_hex(8)}
        )
        status, headers, _ = await _ask(gateway, token, "random-kid")
        assert status == 401 and 'error_description="unknown_key"' in headers["www-authenticate"]
    allowed = 1 + int((time.monotonic() - started) / REFRESH_MIN_S)
    assert await provider.jwks_reads() - reads <= allowed


async def test_an_unreachable_provider_is_503_and_static_tokens_still_work() -> None:
    closed = free_port()  # nothing listens there
    oidc = OidcSettings(issuer=f"http://127.0.0.1:{closed}/realms/x", audience="http://127.0.0.1:1")
    settings = GatewaySettings(tokens=parse_tokens(f"{ALICE}=alice"), identity=IdentitySettings(oidc=oidc))
    admission = Admission(settings)
    try:
        foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        token = jwt.encode({"sub": "alice"}, foreign, algorithm="RS256", headers={"kid": "k"})
        with pytest.raises(GatewayError) as refused:
            await admission.principal({"authorization": f"Bearer {token}"}, "/api/threads", public=False)
        assert refused.value.status == 503 and refused.value.code == "unavailable"
        assert refused.value.headers["Retry-After"] == "5"
        static = await admission.principal({"authorization": f"Bearer {ALICE}"}, "/api/threads", public=False)
        assert static is not None and static.name == "alice"
    finally:
        await admission.aclose()
