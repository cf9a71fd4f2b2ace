"""Who is calling: a static bearer token's principal, or `local` when the gateway has no tokens.

Tokens of an OpenID provider are verified by `gateway.guard.admission` (which asks this module
about static tokens first).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.errors import GatewayError
from gateway.identity.principal import LOCAL, Principal
from gateway.identity.scopes import STATIC_DEFAULT
from gateway.settings import GatewaySettings

__all__ = ["authenticate"]


def authenticate(headers: Mapping[str, str], settings: GatewaySettings) -> Principal:
    """The principal of `authorization: Bearer <token>` among the static tokens, with its scopes.

    Every request is `local` (with every scope) without tokens and without an OpenID provider.

    Raises:
        GatewayError: 401 `unauthorized` when the token is none of the static tokens.
    """
    if not settings.tokens and settings.identity.oidc is None:
        return LOCAL
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise GatewayError.unauthorized()
    # Compare against every token in constant time: the answer's timing says nothing about them.
    found: tuple[str, str] | None = None
    for known, principal in settings.tokens.items():
        if hmac.compare_digest(known.encode(), token.encode()):
            found = (known, principal)
    if found is None:
        raise GatewayError.unauthorized()
    return Principal(found[1], settings.identity.token_scopes.get(found[0], STATIC_DEFAULT))
