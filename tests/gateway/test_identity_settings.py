"""Identity settings: the static tokens' scopes syntax, the provider's and the quotas' variables (pure)."""

from __future__ import annotations

import pytest

from gateway.guard.static_tokens import authenticate
from gateway.identity.scopes import ALL_SCOPES, STATIC_DEFAULT
from gateway.settings import load_settings, token_entries
from settings.env_values import SettingsError
from tests.gateway_helpers import TEST_AGENTS

ISSUER = "https://login.example.com/realms/acme"


def test_a_static_token_names_its_scopes_after_the_principal() -> None:
    entries = token_entries("abcdefgh1=alice, abcdefgh2=ci-bot:agents:ask+agents:approve")
    assert entries == [
        ("abcdefgh1", "alice", None),
        ("abcdefgh2", "ci-bot", frozenset({"agents:ask", "agents:approve"})),
    ]
    settings = load_settings(
        environ={"REACT_GATEWAY_TOKENS": "abcdefgh1=alice,abcdefgh2=ci-bot:agents:ask"}, agents=TEST_AGENTS
    )
    assert settings.tokens == {"abcdefgh1": "alice", "abcdefgh2": "ci-bot"}
    alice = authenticate({"authorization": "Bearer abcdefgh1"}, settings)
    bot = authenticate({"authorization": "Bearer abcdefgh2"}, settings)
    assert alice.scopes == STATIC_DEFAULT and "agents:admin" not in alice.scopes
    assert bot.name == "ci-bot" and bot.scopes == frozenset({"agents:ask"})
    without_tokens = authenticate({}, load_settings(environ={}, agents=TEST_AGENTS))
    assert without_tokens.name == "local" and without_tokens.scopes == frozenset(ALL_SCOPES)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("abcdefgh1=alice:", "scopes must be"),
        ("abcdefgh1=alice:agents:fly", "agents:fly"),
        ("abcdefgh1=alice:agents:ask+", None),
        ("abcdefgh1=al ice:agents:ask", "principal"),
    ],
)
def test_bad_static_scopes_are_refused_by_name(value: str, named: str | None) -> None:
    if named is None:  # a trailing `+` is only an empty part: the scopes before it stand
        assert token_entries(value)[0][2] == frozenset({"agents:ask"})
        return
    with pytest.raises(SettingsError, match=named):
        token_entries(value)


def test_the_provider_and_quota_settings() -> None:
    env = {
        "REACT_GATEWAY_OIDC_ISSUER": ISSUER,
        "REACT_GATEWAY_OIDC_AUDIENCE": "https://agents.example.com/",
        "REACT_GATEWAY_OIDC_CLIENT_ID": "chat-page",
        "REACT_GATEWAY_OIDC_DISCOVERY_URL": "http://keycloak:8080/realms/acme/.well-known/openid-configuration",
        "REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL": "3",
        "REACT_GATEWAY_REQUESTS_PER_MINUTE": "60",
    }
    # An OpenID provider alone is enough to listen beyond loopback.
    settings = load_settings(host="0.0.0.0", environ=env, agents=TEST_AGENTS)
    oidc = settings.identity.oidc
    assert (
        oidc is not None and oidc.audience == "https://agents.example.com" and oidc.principal_claim == "sub"
    )
    assert oidc.discovery_url == f"{ISSUER}/.well-known/openid-configuration"
    assert oidc.client_id == "chat-page"
    assert oidc.metadata_url == "http://keycloak:8080/realms/acme/.well-known/openid-configuration"
    quotas = settings.identity.quotas
    assert (
        quotas.max_active_per_principal,
        quotas.daily_tokens_per_principal,
        quotas.requests_per_minute,
    ) == (
        3,
        None,
        60,
    )
    for bad, named in [
        ({"REACT_GATEWAY_OIDC_ISSUER": ISSUER}, "set together"),
        ({"REACT_GATEWAY_OIDC_ISSUER": "ftp://x", "REACT_GATEWAY_OIDC_AUDIENCE": "https://a"}, "http"),
        ({"REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL": "0"}, "MAX_ACTIVE"),
        ({"REACT_GATEWAY_DAILY_TOKENS_PER_PRINCIPAL": "lots"}, "DAILY_TOKENS"),
    ]:
        with pytest.raises(SettingsError, match=named):
            load_settings(environ=bad, agents=TEST_AGENTS)
