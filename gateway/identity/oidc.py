"""Bearer tokens of an OpenID provider: discovery, its keys (cached, rotation followed), verification.

`OidcVerifier.verify` checks a token with PyJWT against the provider's keys: its size first
(`max_token_bytes`), then the header's `alg` against the allow-list (`ASYMMETRIC_ALGORITHMS`:
never `none`, never HMAC, so the provider's public key cannot be used as an HMAC secret), the
signature with the key its `kid` names (the key's own algorithm, whatever the header says), then
`iss`, `aud` (one of the audiences the route accepts), `exp` and `nbf` (with `leeway_s`), and last
the principal claim: a printable string of at most `MAX_CLAIM_CHARS`, whose principal is the one
the settings' principal map names for it, else the provider's own (`provider_principal`: never a
static principal's name, nor another issuer's user's). Each
refusal is a `TokenRefused` whose `reason` names the check; the caller answers them all with the
same 401.

The keys (`ProviderKeys`) are read from the `jwks_uri` of `<issuer>/.well-known/openid-configuration`
and kept: a token whose `kid` is not among them refetches them, at most once every
`keys_refresh_min_s` (random `kid`s cannot make the gateway hammer the provider), and one fetch is
in flight at a time (every request waiting for keys shares it). Fetches are async (httpx), bounded in
time and size; the event loop never blocks on the provider, and a verified token costs no I/O.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx
import jwt
from jwt import PyJWK

from gateway.identity.principal import MAX_CLAIM_CHARS, provider_principal
from gateway.identity.scopes import scopes_of_claims
from gateway.identity.settings import OidcSettings

__all__ = ["OidcVerifier", "ProviderKeys", "ProviderUnavailable", "TokenRefused", "VerifiedToken"]

MAX_DOCUMENT_BYTES = 256 * 1024
"""The largest discovery or JWKS document read from the provider."""
MAX_KEYS = 100


class TokenRefused(Exception):
    """A bearer token the gateway does not accept; `reason` names the failed check."""

    def __init__(self, reason: str) -> None:
        """A refusal for `reason`.

        Reasons: `oversized`, `malformed`, `algorithm`, `unknown_key`, `signature`, `expired`,
        `not_yet_valid`, `issuer`, `audience`, `missing_claim`, `principal`.
        """
        super().__init__(reason)
        self.reason = reason


class ProviderUnavailable(Exception):
    """The provider's metadata or keys could not be read (and none are cached for this token)."""


@dataclass(frozen=True)
class VerifiedToken:
    """A token that passed every check."""

    principal: str
    scopes: frozenset[str]
    claims: Mapping[str, Any]


class ProviderKeys:
    """The provider's signing keys by `kid`, fetched on demand, refetched on an unknown `kid`."""

    def __init__(self, settings: OidcSettings, http: httpx.AsyncClient) -> None:
        """The keys of `settings.issuer`'s provider, read through `http`."""
        self._settings = settings
        self._http = http
        self._jwks_uri: str | None = None
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0
        """How many times the keys were fetched (tests and metrics read it)."""

    async def key(self, kid: str | None) -> dict[str, Any] | None:
        """The JWK named `kid` (None: the only key, if there is one); None when the provider has none such.

        Raises:
            ProviderUnavailable: the keys are not known yet and the provider cannot be read.
        """
        found = self._lookup(kid)
        if found is not None and not self._expired():
            return found
        await self._refresh()
        return self._lookup(kid)

    def _lookup(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _expired(self) -> bool:
        return (
            self._fetched_at is not None
            and time.monotonic() - self._fetched_at > self._settings.keys_max_age_s
        )

    def _may_fetch(self) -> bool:
        last = self._attempted_at
        return last is None or time.monotonic() - last >= self._settings.keys_refresh_min_s

    async def _refresh(self) -> None:
        """Fetch the keys once, whoever else is waiting (single flight)."""
        started = time.monotonic()
        async with self._lock:
            if self._attempted_at is not None and self._attempted_at >= started:
                if self._fetched_at is None:
                    raise ProviderUnavailable("the provider could not be read")
                return  # another request fetched them while this one waited
            if not self._may_fetch():  # fetched a moment ago: at most once every keys_refresh_min_s
                if self._fetched_at is None:
                    raise ProviderUnavailable("the provider could not be read a moment ago")
                return
            self._attempted_at = time.monotonic()
            try:
                if self._jwks_uri is None:
                    self._jwks_uri = await self._discover()
                document = await self._get_json(self._jwks_uri)
            except ProviderUnavailable:
                if self._fetched_at is None:
                    raise
                return  # keep serving the keys we have
            self.fetches += 1
            self._keys = _keys_of(document)
            self._fetched_at = time.monotonic()

    async def _discover(self) -> str:
        metadata = await self._get_json(self._settings.metadata_url)
        if metadata.get("issuer") != self._settings.issuer:
            raise ProviderUnavailable("the provider's metadata names another issuer")
        uri = metadata.get("jwks_uri")
        if not isinstance(uri, str) or not uri.startswith(("https://", "http://")):
            raise ProviderUnavailable("the provider's metadata has no jwks_uri")
        return uri

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            async with self._http.stream("GET", url, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise ProviderUnavailable(f"{url} answered {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise ProviderUnavailable(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
        except httpx.HTTPError as err:
            raise ProviderUnavailable(f"{url}: {type(err).__name__}") from None
        try:
            document = json.loads(bytes(body))
        except ValueError:
            raise ProviderUnavailable(f"{url} did not send JSON") from None
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"{url} did not send a JSON object")
        return document  # pyright: ignore[reportUnknownVariableType]


def _keys_of(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The signing keys of a JWKS document by `kid` (a key without one is kept under `""`)."""
    keys: dict[str, dict[str, Any]] = {}
    listed: object = document.get("keys")
    if not isinstance(listed, list):
        return keys
    for item in cast("list[object]", listed)[:MAX_KEYS]:
        if not isinstance(item, dict):
            continue
        jwk = cast("dict[str, Any]", item)
        if jwk.get("use", "sig") != "sig" or jwk.get("kty") not in ("RSA", "EC", "OKP"):
            continue  # no symmetric (`oct`) key is ever a verification key
        keys[str(jwk.get("kid", ""))] = dict(jwk)
    return keys


class OidcVerifier:
    """Verifies the provider's bearer tokens (`verify`)."""

    def __init__(self, settings: OidcSettings, http: httpx.AsyncClient | None = None) -> None:
        """A verifier of `settings`' provider (its HTTP client: `http`, else one of its own)."""
        self.settings = settings
        self._http = http or httpx.AsyncClient(timeout=settings.discovery_timeout_s, follow_redirects=False)
        self.keys = ProviderKeys(settings, self._http)
        self._prepared_keys: dict[tuple[int, str], tuple[dict[str, Any], PyJWK]] = {}

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._http.aclose()

    async def verify(self, token: str, audiences: Sequence[str]) -> VerifiedToken:
        """The principal and scopes of `token`, if it passes every check for one of `audiences`.

        Raises:
            TokenRefused: a check failed (its `reason`).
            ProviderUnavailable: the provider's keys cannot be read.
        """
        settings = self.settings
        if len(token) > settings.max_token_bytes:
            raise TokenRefused("oversized")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("malformed") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in settings.algorithms:
            raise TokenRefused("algorithm")
        kid = header.get("kid")
        if kid is not None and (not isinstance(kid, str) or len(kid) > 200):
            raise TokenRefused("malformed")
        jwk = await self.keys.key(kid)
        if jwk is None:
            raise TokenRefused("unknown_key")
        key = self._prepared(jwk, alg)
        claims = self._decode(token, key, alg, audiences)
        value = claims.get(settings.principal_claim)
        if not isinstance(value, str) or not 0 < len(value) <= MAX_CLAIM_CHARS or not value.isprintable():
            raise TokenRefused("principal")
        principal = settings.principal_map.get(value) or provider_principal(settings.issuer, value)
        return VerifiedToken(principal=principal, scopes=scopes_of_claims(claims), claims=claims)

    def _prepared(self, jwk: dict[str, Any], alg: str) -> PyJWK:
        """The verification key of `jwk` for `alg`, kept while the JWK is the provider's.

        A JWK with its own `alg` is bound to that one, whatever the token's header says.
        """
        bound = jwk.get("alg") if isinstance(jwk.get("alg"), str) else alg
        cache_key = (id(jwk), str(bound))
        found = self._prepared_keys.get(cache_key)
        if found is not None and found[0] is jwk:
            return found[1]
        try:
            key = PyJWK(jwk, algorithm=None if "alg" in jwk else alg)
        except jwt.PyJWTError:
            raise TokenRefused("unknown_key") from None
        if len(self._prepared_keys) >= MAX_KEYS * 4:
            self._prepared_keys.clear()
        self._prepared_keys[cache_key] = (jwk, key)
        return key

    def _decode(self, token: str, key: PyJWK, alg: str, audiences: Sequence[str]) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=list(audiences),
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("not_yet_valid") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("audience") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("issuer") from None
        except jwt.MissingRequiredClaimError:
            raise TokenRefused("missing_claim") from None
        except jwt.InvalidAlgorithmError:
            raise TokenRefused("algorithm") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("signature") from None
        except jwt.PyJWTError:
            raise TokenRefused("malformed") from None
