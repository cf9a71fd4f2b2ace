"""Identity settings: the OpenID provider the gateway trusts, the static tokens' scopes, the quotas.

    REACT_GATEWAY_OIDC_ISSUER="https://login.example.com/realms/acme"   # metadata: <issuer>/.well-known/...
    REACT_GATEWAY_OIDC_AUDIENCE="https://agents.example.com"            # the gateway's canonical URL
    REACT_GATEWAY_OIDC_PRINCIPAL_CLAIM="sub"                            # the claim naming the principal
    REACT_GATEWAY_OIDC_PRINCIPAL_MAP="8d2f...=alice,ci@acme.com=ci-bot"  # claim value=static principal
    REACT_GATEWAY_OIDC_CLIENT_ID="chat-page"                            # the chat page's public client
    REACT_GATEWAY_OIDC_DISCOVERY_URL="http://keycloak:8080/realms/acme/.well-known/openid-configuration"
                                                    # optional: where the gateway itself reads the metadata
    REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL=4
    REACT_GATEWAY_DAILY_TOKENS_PER_PRINCIPAL=2000000
    REACT_GATEWAY_REQUESTS_PER_MINUTE=120
    REACT_GATEWAY_SIGNIN_PER_MINUTE=60              # default 60: the chat page's token exchanges per address

Without an issuer the gateway takes static tokens only (`REACT_GATEWAY_TOKENS`); with one, both.
A provider's user is its own principal (`gateway.identity.principal.provider_principal`), unless
the principal map names its claim value: then it is that static principal, on purpose.
Unset quotas are unlimited; the chat page's token exchange is limited by default (60 a minute
per client address).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from gateway.identity.principal import static_name_problem
from gateway.identity.scopes import ALL_SCOPES
from settings.admission import max_active_of
from settings.env_values import SettingsError, value, whole

__all__ = [
    "ISSUER_ENV",
    "IdentitySettings",
    "OidcSettings",
    "QuotaSettings",
    "load_identity",
    "parse_principal_map",
    "parse_static_scopes",
]

ISSUER_ENV = "REACT_GATEWAY_OIDC_ISSUER"
AUDIENCE_ENV = "REACT_GATEWAY_OIDC_AUDIENCE"
PRINCIPAL_CLAIM_ENV = "REACT_GATEWAY_OIDC_PRINCIPAL_CLAIM"
PRINCIPAL_MAP_ENV = "REACT_GATEWAY_OIDC_PRINCIPAL_MAP"
MAX_MAPPED = 1000
CLIENT_ID_ENV = "REACT_GATEWAY_OIDC_CLIENT_ID"
DISCOVERY_URL_ENV = "REACT_GATEWAY_OIDC_DISCOVERY_URL"
DAILY_TOKENS_ENV = "REACT_GATEWAY_DAILY_TOKENS_PER_PRINCIPAL"
REQUESTS_PER_MINUTE_ENV = "REACT_GATEWAY_REQUESTS_PER_MINUTE"
SIGNIN_PER_MINUTE_ENV = "REACT_GATEWAY_SIGNIN_PER_MINUTE"
DEFAULT_SIGNIN_PER_MINUTE = 60
ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The only signature algorithms a token may use: never `none`, never HMAC (whose key could be
made of the provider's public key)."""
STATIC_SCOPE_SEPARATOR = "+"


@dataclass(frozen=True)
class OidcSettings:
    """The OpenID provider whose tokens the gateway accepts."""

    issuer: str
    """The `iss` of its tokens; its metadata is at `<issuer>/.well-known/openid-configuration`."""
    audience: str
    """The gateway's canonical URL: a token's `aud` must name it (or `<audience>/mcp` on `/mcp`)."""
    principal_claim: str = "sub"
    principal_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Claim value -> the static principal a provider's user is, on purpose (others: their own names)."""
    client_id: str | None = None
    """The chat page's public client (authorization code with PKCE, no secret)."""
    algorithms: tuple[str, ...] = ASYMMETRIC_ALGORITHMS
    leeway_s: float = 30.0
    """Clock skew allowed on `exp`, `nbf` and `iat`."""
    max_token_bytes: int = 8192
    """A longer bearer token is refused before it is parsed."""
    keys_refresh_min_s: float = 5.0
    """An unknown `kid` refetches the keys at most this often (random `kid`s cannot hammer the provider)."""
    keys_max_age_s: float = 3600.0
    """Keys older than this are refetched on the next request that needs them."""
    discovery_timeout_s: float = 5.0
    fetch_discovery_from: str | None = None
    """Where the gateway reads the metadata when the issuer's URL does not reach the provider from
    the gateway's network (a container); the metadata must still name `issuer`."""

    @property
    def discovery_url(self) -> str:
        """Where the provider's metadata is (what clients are told)."""
        return f"{self.issuer.rstrip('/')}/.well-known/openid-configuration"

    @property
    def metadata_url(self) -> str:
        """Where the gateway reads the provider's metadata."""
        return self.fetch_discovery_from or self.discovery_url

    @property
    def mcp_resource(self) -> str:
        """The MCP endpoint's resource URI (RFC 9728, RFC 8707): `<audience>/mcp`."""
        return f"{self.audience}/mcp"


@dataclass(frozen=True)
class QuotaSettings:
    """Per-principal limits (None: unlimited)."""

    max_active_per_principal: int | None = None
    daily_tokens_per_principal: int | None = None
    requests_per_minute: int | None = None
    signin_per_minute: int = DEFAULT_SIGNIN_PER_MINUTE
    """Calls of `POST /api/identity/token` (a relay to the provider, before any token) a minute per
    client address, per gateway instance."""
    tokens_cache_s: float = 5.0
    """How long a principal's tokens-today reading is reused (summing it reads many runs)."""


@dataclass(frozen=True)
class IdentitySettings:
    """Who may call and how much: the OpenID provider, static tokens' scopes, quotas."""

    oidc: OidcSettings | None = None
    token_scopes: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    """Static token -> its scopes, for the tokens whose setting names them (others: `STATIC_DEFAULT`)."""
    quotas: QuotaSettings = field(default_factory=QuotaSettings)


def parse_static_scopes(text: str, variable: str, where: str) -> frozenset[str]:
    """The scopes of a static token's setting (`agents:ask+agents:approve`), `where` in `variable`.

    Raises:
        SettingsError: an empty list, or a scope that is not one of `ALL_SCOPES`.
    """
    scopes = frozenset(part.strip() for part in text.split(STATIC_SCOPE_SEPARATOR) if part.strip())
    unknown = sorted(scopes - set(ALL_SCOPES))
    if not scopes or unknown:
        raise SettingsError(
            variable,
            f"{where}: scopes must be one or more of {', '.join(ALL_SCOPES)} joined by "
            f"{STATIC_SCOPE_SEPARATOR!r}" + (f" (not {unknown[0]!r})" if unknown else ""),
        )
    return scopes


def load_identity(
    env: Mapping[str, str], token_scopes: Iterable[tuple[str, frozenset[str]]] = ()
) -> IdentitySettings:
    """The identity settings of the environment, with the static tokens' scopes.

    Raises:
        SettingsError: an issuer without an audience (or the other way round), a URL that
            is not http(s), an empty claim name, a quota that is not a positive whole number.
    """
    issuer = value(env, ISSUER_ENV) or ""
    audience = (value(env, AUDIENCE_ENV) or "").rstrip("/")
    oidc: OidcSettings | None = None
    if issuer or audience:
        if not issuer or not audience:
            raise SettingsError(
                ISSUER_ENV, f"{ISSUER_ENV} and {AUDIENCE_ENV} are set together", sentence=True
            )
        for name, url in ((ISSUER_ENV, issuer), (AUDIENCE_ENV, audience)):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
                raise SettingsError(
                    name, f"{name} must be an http(s) URL without query or fragment", sentence=True
                )
        claim = value(env, PRINCIPAL_CLAIM_ENV) or "sub"
        client_id = value(env, CLIENT_ID_ENV)
        fetch_from = value(env, DISCOVERY_URL_ENV)
        if fetch_from is not None and not fetch_from.startswith(("http://", "https://")):
            raise SettingsError(
                DISCOVERY_URL_ENV, f"{DISCOVERY_URL_ENV} must be an http(s) URL", sentence=True
            )
        oidc = OidcSettings(
            issuer=issuer,
            audience=audience,
            principal_claim=claim,
            principal_map=parse_principal_map(env.get(PRINCIPAL_MAP_ENV, "")),
            client_id=client_id,
            fetch_discovery_from=fetch_from,
        )
    quotas = QuotaSettings(
        max_active_per_principal=max_active_of(env),
        daily_tokens_per_principal=_positive(env, DAILY_TOKENS_ENV),
        requests_per_minute=_positive(env, REQUESTS_PER_MINUTE_ENV),
        signin_per_minute=_positive(env, SIGNIN_PER_MINUTE_ENV) or DEFAULT_SIGNIN_PER_MINUTE,
    )
    return IdentitySettings(oidc=oidc, token_scopes=MappingProxyType(dict(token_scopes)), quotas=quotas)


def parse_principal_map(text: str) -> Mapping[str, str]:
    """The principal map of `value=principal,...` (claim values that hold `,` or `=` cannot be mapped).

    Raises:
        SettingsError: an entry without `=`, a repeated value, a principal off the static rule.
    """
    mapped: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        claim_value, sep, principal = (part.strip() for part in item.partition("="))
        if not sep or not claim_value:
            raise SettingsError(PRINCIPAL_MAP_ENV, f"{item!r} is not <claim value>=<principal>")
        if (problem := static_name_problem(principal)) is not None:
            raise SettingsError(PRINCIPAL_MAP_ENV, problem)
        if claim_value in mapped:
            raise SettingsError(PRINCIPAL_MAP_ENV, f"{claim_value!r} is mapped twice")
        mapped[claim_value] = principal
    if len(mapped) > MAX_MAPPED:
        raise SettingsError(PRINCIPAL_MAP_ENV, f"at most {MAX_MAPPED} entries")
    return MappingProxyType(mapped)


def _positive(env: Mapping[str, str], name: str) -> int | None:
    return whole(env, name, 1)
